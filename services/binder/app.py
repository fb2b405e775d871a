"""The binder with the ``sim`` backend: a simulated GPU fleet that confirms decisions.

Its state is a fold of the log (nodes, pod groups, decisions and its own
confirmations), rebuilt at start from its newest snapshot and the log after
it, so a restart neither loses a decision nor confirms one twice.
"""

from __future__ import annotations

import asyncio
import time

from muster import snapshotting
from muster.fleet.sim import SimFleet
from muster.service import ServiceContext, rebuild_then_consume

from services.binder.handlers import BinderHandlers
from services.binder.snapshot import BinderCodec

TICK_SECONDS = 0.2  # how often run time is checked for completions


async def run(ctx: ServiceContext) -> None:
    s = ctx.subjects
    handlers = BinderHandlers(ctx.bus, s, SimFleet(), clock=time.time, metrics=ctx.metrics)
    subjects = [*s.node_subjects(), s.podgroups, s.decisions("*"), *s.pod_subjects()]
    snapshots, start_seq = await snapshotting.restored(
        ctx.bus, "binder", handlers, BinderCodec(), owner="binder", env=ctx.settings.extra
    )

    async def handle(deliveries, live: bool) -> None:
        await handlers.handle(deliveries, live)
        if snapshots.due(live=live):
            async with handlers.quiet():
                sealed = snapshots.seal()
            await snapshots.take(sealed)

    consumer = asyncio.create_task(
        rebuild_then_consume(
            ctx, "binder", subjects, handle, on_rebuilt=handlers.rebuilt, start_seq=start_seq
        )
    )
    try:
        while not ctx.stop.is_set():
            await asyncio.sleep(TICK_SECONDS)
            if consumer.done():
                break
            if handlers.live:
                await handlers.tick()
    finally:
        ctx.stop.set()
        await consumer
