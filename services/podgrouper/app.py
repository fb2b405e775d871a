"""Composition root of the podgrouper service.

The topologies the system holds are the podgrouper's own past declarations (the topologies subject),
read at start from its newest snapshot on, before the first submission is grouped, and shared by both
doors. A snapshot is taken at start, after a declaration, and while topologies are quiet, once
``MUSTER_SNAPSHOT_EVERY`` messages past the newest: stream retention needs every fold's snapshots to
keep up with the log.
"""

from __future__ import annotations

import asyncio
import contextlib

from muster import snapshotting
from muster.held_topologies import HeldTopologies, read_held
from muster.held_topologies_snapshot import WHAT, HeldTopologiesCodec
from muster.service import ServiceContext

from services.podgrouper.handlers import PodgrouperHandlers
from services.podgrouper.tenant_handlers import TenantHandlers


async def run(ctx: ServiceContext) -> None:
    topologies = HeldTopologies()
    snapshots, start_seq = await snapshotting.restored(
        ctx.bus, WHAT, topologies, HeldTopologiesCodec(), owner=WHAT, env=ctx.settings.extra
    )
    await read_held(ctx.bus, topologies, start_seq=start_seq)
    if snapshots.due(live=False):
        await snapshots.take()
    handlers = PodgrouperHandlers(ctx.bus, ctx.subjects, topologies, snapshots)
    tenants = TenantHandlers(ctx.bus, ctx.subjects, topologies)

    async def catch_up() -> None:
        topologies.watermark = max(topologies.watermark, await ctx.bus.last_seq())

    keeper = asyncio.create_task(snapshotting.keep_snapshotted(snapshots, handlers.turn, catch_up, ctx.stop))
    try:
        # Two durable consumers: the first one's filter is what it has always been, so a system
        # upgraded in place keeps its position; tenants' requests have their own.
        await asyncio.gather(
            ctx.bus.consume("podgrouper", [ctx.subjects.workloads], handlers.handle, stop=ctx.stop),
            ctx.bus.consume(
                "podgrouper-tenants", [ctx.subjects.tenant_workloads()], tenants.handle, stop=ctx.stop
            ),
        )
    finally:
        keeper.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await keeper
