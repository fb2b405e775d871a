"""The queue-controller: owns queue definitions; answers every request with a fact.

Its book of queues is a fold of its own past answers (the queues subject),
read at start from its newest snapshot on. Later answers are folded in as
they are made, not read back: the controller is the queues subject's only
writer, so once an answer is stored at sequence S, the book is the fold of
the subject through S. A snapshot is taken at start, after an answer, and
while queues are quiet (the book is then the fold through the log's end),
once ``MUSTER_SNAPSHOT_EVERY`` messages past the newest and not sooner than
``MUSTER_SNAPSHOT_MIN_INTERVAL``: stream retention needs every fold's
snapshots to keep up with the log.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from muster import snapshotting
from muster.bus import Delivery
from muster.events import DeleteQueue, QueueSpec, UpsertQueue
from muster.queues.decide import Book, decide, evolve
from muster.queues.default import DEFAULT_QUEUE as FALLBACK_QUEUE
from muster.queues.snapshot import QueueBook, QueueBookCodec
from muster.service import ServiceContext

log = logging.getLogger(__name__)

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
    snapshots, start_seq = await snapshotting.restored(
        ctx.bus, "queue-controller", fold, QueueBookCodec(), owner="queue-controller", env=ctx.settings.extra
    )
    book = await load_book(ctx, fold, start_seq)
    if snapshots.due(live=False):
        await snapshots.take()
    if not book:
        answer = decide(book, UpsertQueue(queue=DEFAULT_QUEUE))
        book = evolve(book, answer)
        await ctx.bus.publish(ctx.subjects.queues, [answer], msg_id="queue-controller:default-queue")

    # Answering and claiming the log's end for a snapshot take turns: an answer half published is
    # neither on the log nor safely off it.
    turn = asyncio.Lock()

    async def handle(deliveries: list[Delivery]) -> None:
        async with turn:
            await answer(deliveries)

    async def answer(deliveries: list[Delivery]) -> None:
        nonlocal book
        for delivery in deliveries:
            answers = []
            for event in delivery.events:
                if isinstance(event, UpsertQueue | DeleteQueue):
                    answer = decide(book, event)
                    book = evolve(book, answer)
                    answers.append(answer)
            if answers:
                stored = await ctx.bus.publish(
                    ctx.subjects.queues,
                    answers,
                    msg_id=f"queue-controller:{delivery.seq}",
                    context=delivery.context,
                )
                fold.book = book
                fold.watermark = max(fold.watermark, stored)
                if snapshots.due(live=True):
                    await snapshots.take()

    async def catch_up() -> None:
        fold.book = book
        fold.watermark = max(fold.watermark, await ctx.bus.last_seq())

    keeper = asyncio.create_task(snapshotting.keep_snapshotted(snapshots, turn, catch_up, ctx.stop))
    try:
        await ctx.bus.consume("queue-controller", [ctx.subjects.queue_requests], handle, stop=ctx.stop)
    finally:
        keeper.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await keeper
