"""Composition root of the podgrouper service."""

from __future__ import annotations

from muster.service import ServiceContext

from services.podgrouper.handlers import PodgrouperHandlers


async def run(ctx: ServiceContext) -> None:
    handlers = PodgrouperHandlers(ctx.bus, ctx.subjects)
    await ctx.bus.consume("podgrouper", [ctx.subjects.workloads], handlers.handle, stop=ctx.stop)
