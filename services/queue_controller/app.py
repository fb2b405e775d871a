"""The queue-controller: owns queue definitions; answers every request with a fact.

Its book of queues is a fold of its own past answers (the queues subject),
read at start from its newest snapshot on. A snapshot is taken then, once
the log has moved ``MUSTER_SNAPSHOT_EVERY`` messages past the newest: the
book is read only at start (later answers are folded in as they are made,
not read back), so that is where it is known to be the log's.
"""

from __future__ import annotations

import os

from muster import snapshotting
from muster.bus import Delivery
from muster.events import DeleteQueue, QueueSpec, UpsertQueue
from muster.service import ServiceContext
from muster.snapshots import ObjectStoreSnapshots

from services.podgrouper.metadata import DEFAULT_QUEUE as FALLBACK_QUEUE
from services.queue_controller.decide import Book, decide, evolve
from services.queue_controller.snapshot import QueueBook, QueueBookCodec

# An empty system gets one queue, so a workload that names none has somewhere to go: the
# podgrouper's fallback (KAI's `default-queue`). A log that already has queues is left as it is.
DEFAULT_QUEUE = QueueSpec(name=FALLBACK_QUEUE)


async def load_book(ctx: ServiceContext, fold: QueueBook | None = None, start_seq: int = 1) -> Book:
    """The queues as the log says they are: the controller's own past answers, replayed into ``fold``
    (a new one by default) from ``start_seq`` on."""
    fold = fold if fold is not None else QueueBook()
    end = await ctx.bus.last_seq()
    async for delivery in ctx.bus.read([ctx.subjects.queues], start_seq=start_seq, end_seq=end):
        for event in delivery.events:
            fold.book = evolve(fold.book, event)
    # Read through ``end``, whatever subject its last messages were on: the next start reads on from there.
    fold.watermark = max(fold.watermark, end)
    return fold.book


async def run(ctx: ServiceContext) -> None:
    fold = QueueBook()
    snapshots = snapshotting.Snapshotter(
        await ObjectStoreSnapshots.open(ctx.bus.js, ctx.subjects.stream, "queue-controller"),
        "queue-controller",
        fold,
        QueueBookCodec(),
        **snapshotting.settings(dict(os.environ)),
    )
    book = await load_book(ctx, fold, await snapshots.restore(await ctx.bus.first_seq()))
    if snapshots.due(live=False):
        await snapshots.take()
    if not book:
        answer = decide(book, UpsertQueue(queue=DEFAULT_QUEUE))
        book = evolve(book, answer)
        await ctx.bus.publish(ctx.subjects.queues, [answer], msg_id="queue-controller:default-queue")

    async def handle(deliveries: list[Delivery]) -> None:
        nonlocal book
        for delivery in deliveries:
            answers = []
            for event in delivery.events:
                if isinstance(event, UpsertQueue | DeleteQueue):
                    answer = decide(book, event)
                    book = evolve(book, answer)
                    answers.append(answer)
            if answers:
                await ctx.bus.publish(
                    ctx.subjects.queues,
                    answers,
                    msg_id=f"queue-controller:{delivery.seq}",
                    context=delivery.context,
                )

    await ctx.bus.consume("queue-controller", [ctx.subjects.queue_requests], handle, stop=ctx.stop)
