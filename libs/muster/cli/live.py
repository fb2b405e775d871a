"""What the running system knows now, read from its log: the queues there are, the jobs there are.

Queues are read where the allocator and the queue-controller read them: the
controller's answers on the queues subject, folded by the controller's own
``evolve``, from the newest snapshot of its book on (the stream may have
purged older messages).
"""

from __future__ import annotations

from muster.bus import NatsBus
from muster.events import PodGroupCreated, PodGroupDeleted
from muster.queues.decide import evolve
from muster.queues.snapshot import QueueBook, QueueBookCodec
from muster.snapshots import existing_stores, restore_newest

QUEUE_BOOK_FOLD = "queue-controller"
"""The queue-controller's fold, as its snapshots name it; its store has the same owner."""


async def _restore_queue_book(bus: NatsBus, fold: QueueBook, first_seq: int) -> int:
    """Restore the controller's newest snapshot that the stream carries on from into ``fold``; the
    sequence to read on from (1 when there is none)."""
    store = dict(await existing_stores(bus.js, bus.subjects.stream)).get(QUEUE_BOOK_FOLD)
    if store is None:
        return 1
    codec = QueueBookCodec()
    meta = await restore_newest(
        store,
        QUEUE_BOOK_FOLD,
        lambda meta, image: codec.restore(fold, image, meta.digest),
        format=codec.format,
        at_least=first_seq - 1,
    )
    return 1 if meta is None else meta.seq + 1


async def live_queues(bus: NatsBus) -> frozenset[str] | None:
    """The names of the queues the system has now; None when that cannot be known: the stream has
    purged its oldest messages and no snapshot of the controller's book covers what went."""
    fold = QueueBook()
    first_seq = await bus.first_seq()
    start = await _restore_queue_book(bus, fold, first_seq)
    if start < first_seq:
        return None
    async for delivery in bus.read([bus.subjects.queues], start_seq=start):
        for event in delivery.events:
            fold.book = evolve(fold.book, event)
    return frozenset(fold.book)


async def job_names(bus: NatsBus, *, live: bool = False) -> list[str]:
    """Names of the jobs the log has created: with ``live``, only those not deleted since."""
    alive: set[str] = set()
    for_ever: set[str] = set()
    async for delivery in bus.read([bus.subjects.podgroups]):
        for event in delivery.events:
            if isinstance(event, PodGroupCreated):
                alive.add(event.name)
                for_ever.add(event.name)
            elif isinstance(event, PodGroupDeleted):
                alive.discard(event.name)
    return sorted(alive if live else for_ever)
