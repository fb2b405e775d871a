"""What the running system knows now, read from its log: the queues there are, the jobs there are, the
KAI Topologies it holds.

Queues are read where the allocator and the queue-controller read them: the
controller's answers on the queues subject, folded by the controller's own
``evolve``, from the newest snapshot of its book on (the stream may have
purged older messages). Topologies likewise: the podgrouper's declarations,
folded by its own fold, from its newest snapshot on.
"""

from __future__ import annotations

from muster.bus import NatsBus
from muster.events import PodGroupCreated, PodGroupDeleted
from muster.held_topologies import HeldTopologies, read_held
from muster.held_topologies_snapshot import WHAT as HELD_FOLD
from muster.held_topologies_snapshot import HeldTopologiesCodec
from muster.queues.decide import evolve
from muster.queues.snapshot import QueueBook, QueueBookCodec
from muster.snapshots import existing_stores, restore_newest
from muster.snapshotting import Codec
from muster.topologies import TopologyDef

QUEUE_BOOK_FOLD = "queue-controller"
"""The queue-controller's fold, as its snapshots name it; its store has the same owner."""


async def _restore(bus: NatsBus, owner: str, codec: Codec, fold: object, first_seq: int) -> int:
    """Restore ``owner``'s newest snapshot that the stream carries on from into ``fold``; the sequence to
    read on from (1 when there is none)."""
    store = dict(await existing_stores(bus.js, bus.subjects.stream)).get(owner)
    if store is None:
        return 1
    meta = await restore_newest(
        store,
        owner,
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
    start = await _restore(bus, QUEUE_BOOK_FOLD, QueueBookCodec(), fold, first_seq)
    if start < first_seq:
        return None
    async for delivery in bus.read([bus.subjects.queues], start_seq=start):
        for event in delivery.events:
            fold.book = evolve(fold.book, event)
    return frozenset(fold.book)


async def live_topologies(bus: NatsBus) -> dict[str, TopologyDef] | None:
    """The KAI Topologies the system holds now, by name; None when that cannot be known (as for
    ``live_queues``)."""
    fold = HeldTopologies()
    first_seq = await bus.first_seq()
    start = await _restore(bus, HELD_FOLD, HeldTopologiesCodec(), fold, first_seq)
    if start < first_seq:
        return None
    return (await read_held(bus, fold, start_seq=start)).by_name


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
