"""The node monitor: declares silent agent nodes lost, as events.

``MUSTER_NODE_TIMEOUT`` (seconds, default 30) is how long an agent node may
go without a heartbeat. A restarted monitor counts every node as heard at
its start, so its own restart never declares a node lost. It starts from
its newest snapshot (``muster.nodes.snapshot``) and the log after it.
"""

from __future__ import annotations

import asyncio
import time

from muster import snapshotting
from muster.nodes.snapshot import NodeWatchCodec
from muster.nodes.watch import NodeWatch
from muster.service import ServiceContext, rebuild_then_consume


async def run(ctx: ServiceContext) -> None:
    timeout = float(ctx.settings.extra.get("MUSTER_NODE_TIMEOUT", "30"))
    watch = NodeWatch(timeout=timeout)
    s = ctx.subjects
    rebuilt = asyncio.Event()
    published: set[str] = set()
    snapshots, start_seq = await snapshotting.restored(
        ctx.bus, "nodewatch", watch, NodeWatchCodec(), owner="nodewatch", env=ctx.settings.extra
    )

    async def handle(deliveries: list, live: bool) -> None:
        now = time.time()
        for delivery in deliveries:
            refused = None
            for event in delivery.events:
                refused = watch.apply(event, delivery.seq, now) or refused
            watch.watermark = delivery.seq
            if refused is not None and live:
                # Once: while the history is read after a restart, it was lettered when it was new.
                await ctx.bus.dead_letter("nodewatch", delivery.subject, delivery.seq, refused, delivery.data)

    async def on_rebuilt() -> None:
        rebuilt.set()

    consumer = asyncio.create_task(
        rebuild_then_consume(
            ctx,
            "nodewatch",
            [*s.node_subjects(), s.decisions("*"), *s.pod_subjects()],
            handle,
            on_rebuilt=on_rebuilt,
            start_seq=start_seq,
        )
    )
    tick = min(1.0, timeout / 4)
    try:
        while not ctx.stop.is_set() and not consumer.done():
            await asyncio.sleep(tick)
            if rebuilt.is_set():
                for pool, events, msg_id in watch.refusals():
                    await ctx.bus.publish(s.pods(pool), events, msg_id=msg_id)
                for loss in watch.losses_due(time.time()):
                    if loss.msg_id not in published:
                        await ctx.bus.publish(s.nodes(loss.pool), loss.events, msg_id=loss.msg_id)
                        published.add(loss.msg_id)
            # Here, where the refusals owed are published (the fold itself never awaits in between): a
            # snapshot then holds no refusal that is neither owed in it nor on the log.
            if snapshots.due(live=rebuilt.is_set()):
                await snapshots.take()
    finally:
        ctx.stop.set()
        await consumer
