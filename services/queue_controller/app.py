"""The queue-controller: owns queue definitions; answers every request with a fact."""

from __future__ import annotations

from muster.bus import Delivery
from muster.events import DeleteQueue, QueueSpec, UpsertQueue
from muster.service import ServiceContext

from services.podgrouper.metadata import DEFAULT_QUEUE as FALLBACK_QUEUE
from services.queue_controller.decide import Book, decide, evolve

# An empty system gets one queue, so a workload that names none has somewhere to go: the
# podgrouper's fallback (KAI's `default-queue`). A log that already has queues is left as it is.
DEFAULT_QUEUE = QueueSpec(name=FALLBACK_QUEUE)


async def load_book(ctx: ServiceContext) -> Book:
    """The queues as the log says they are: the controller's own past answers, replayed."""
    book: Book = {}
    async for delivery in ctx.bus.read([ctx.subjects.queues]):
        for event in delivery.events:
            book = evolve(book, event)
    return book


async def run(ctx: ServiceContext) -> None:
    book = await load_book(ctx)
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
