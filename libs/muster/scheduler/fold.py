"""The allocator's state for one pool as a fold of the log: the one place events are applied.

The live allocator, replay and simulation all read the log through an
``AllocatorFold``: each message's events go through the epoch fence (a
deposed leader's decisions, and their rejections, are never folded;
``LeaderElected`` raises the pool's epoch) into the engine; the fold
remembers the last stream sequence it read (the watermark a cycle records)
and the last cycle the log recorded for the pool, so the next cycle's
number follows from the log alone, across restarts and config changes
(a restarted allocator is a new fold over the same log).

What each reader does around it stays its own: the live service's I/O and
leadership, replay's comparison with recorded cycles, simulation's fleet.

Everything the fold knows is reachable from this one object: the engine
(its ``ClusterState``), the fence's epochs, the watermark and the last cycle
number. A snapshot taken between two messages is therefore the fold's whole
state at its watermark; restored, folding on from the next message must
give what folding from the start gives.
"""

from __future__ import annotations

from collections.abc import Iterable

from muster.events import (
    AllocatorConfigured,
    CycleCompleted,
    Event,
    LeaderElected,
    PendingReasons,
    QueueStatus,
)
from muster.fencing import EpochFence
from muster.scheduler.engine import Allocator
from muster.scheduler.views import CycleOutcome
from muster.subjects import Subjects

# Events allocators emit themselves: reading them back changes nothing worth a new cycle. Event types
# are final (tagged Structs, never subclassed), so an exact type test is enough; every event of the log
# passes through it.
_OWN = frozenset({CycleCompleted, PendingReasons, QueueStatus, AllocatorConfigured, LeaderElected})


def fold_name(pool: str) -> str:
    """The name a pool's allocator fold goes by in the snapshot store."""
    return f"allocator-{pool}"


class AllocatorFold:
    """One pool's allocator state, folded from the log message by message."""

    def __init__(self, engine: Allocator, pool: str) -> None:
        self.engine = engine
        self.pool = pool
        self.fence = EpochFence()
        self.watermark = 0
        """The stream sequence of the last message folded."""
        self.logged_cycle = 0
        """The highest cycle of this pool recorded on the log."""
        self.refusals: list[tuple[int, str]] = []
        """(sequence, reason) of each message an event of which the state refused
        (``scheduler.state.admission``), for the reader to report and then clear: the live allocator
        dead-letters them. Not part of the state: folding the same log refuses the same again."""
        self.published_cycle = 0
        """The highest cycle this allocator published (its record may not be read back yet)."""

    def fold(self, seq: int, events: Iterable[Event]) -> bool:
        """Fold the message at ``seq``; whether it brought news, something other than allocators' own records."""
        news = False
        for event in events:
            if not self.fence.admit(event):
                continue  # a deposed leader's decision, or its rejection: not part of the state
            refused = self.engine.apply(event)
            if refused is not None:
                self.refusals.append((seq, f"{type(event).__name__} refused: {refused}"))
                continue
            kind = type(event)
            if kind is CycleCompleted:
                if event.pool == self.pool:
                    self.logged_cycle = max(self.logged_cycle, event.cycle)
            elif kind not in _OWN:
                news = True
        self.watermark = seq
        return news

    @property
    def last_cycle(self) -> int:
        """The highest cycle of this pool recorded on the log or published by this allocator."""
        return max(self.logged_cycle, self.published_cycle)

    @property
    def next_cycle(self) -> int:
        return self.last_cycle + 1

    @property
    def log_epoch(self) -> int:
        """The pool's epoch as the log has elected it."""
        return self.fence.current(self.pool)

    def cycle(self, clock: float, *, epoch: int) -> CycleOutcome:
        """The next cycle at ``clock`` over everything folded so far, deciding under ``epoch``."""
        return self.engine.cycle(clock, cycle=self.next_cycle, epoch=epoch, watermark=self.watermark)

    def rerun(self, completed: CycleCompleted) -> CycleOutcome:
        """A recorded cycle again, at its own number, epoch, watermark and clock."""
        c = completed
        return self.engine.cycle(c.clock, cycle=c.cycle, epoch=c.epoch, watermark=c.watermark)

    def published(self, cycle: int) -> None:
        """This allocator published ``cycle``: number after it before its record is read back."""
        self.published_cycle = max(self.published_cycle, cycle)


def consumed_subjects(subjects: Subjects, pool: str) -> list[str]:
    """What an allocator of ``pool`` reads; replay folds exactly these."""
    return [
        *subjects.node_subjects(pool),
        subjects.queues,
        subjects.podgroups,
        subjects.decisions(pool),
        *subjects.pod_subjects(pool),
    ]
