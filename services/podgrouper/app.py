"""Composition root of the podgrouper service."""

from __future__ import annotations

import asyncio

from muster.held_topologies import read_held
from muster.service import ServiceContext

from services.podgrouper.handlers import PodgrouperHandlers
from services.podgrouper.tenant_handlers import TenantHandlers


async def run(ctx: ServiceContext) -> None:
    # The topologies the system holds are the podgrouper's own past declarations: read back before
    # the first submission is grouped, shared by both doors.
    topologies = await read_held(ctx.bus)
    handlers = PodgrouperHandlers(ctx.bus, ctx.subjects, topologies)
    tenants = TenantHandlers(ctx.bus, ctx.subjects, topologies)
    # Two durable consumers: the first one's filter is what it has always been, so a system
    # upgraded in place keeps its position; tenants' requests have their own.
    await asyncio.gather(
        ctx.bus.consume("podgrouper", [ctx.subjects.workloads], handlers.handle, stop=ctx.stop),
        ctx.bus.consume(
            "podgrouper-tenants", [ctx.subjects.tenant_workloads()], tenants.handle, stop=ctx.stop
        ),
    )
