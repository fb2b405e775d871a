"""Fencing by epoch: decisions of a deposed leader are void once its successor is elected.

``LeaderElected`` on the log raises a pool's epoch; from there on, a
``BindRequested`` or ``EvictionRequested`` carrying an older epoch is
stale. The binder answers a stale bind with ``BindRejected`` and does not
act; the allocator (live and in replay) never folds a stale decision, nor
the rejection of one, into its state. Everything here is a function of the
log, so every reader reaches the same verdicts.

Epochs only ever climb one election at a time: a new leader takes one
above both its lease's last epoch and the highest the log has seen
(``next_epoch``), never more than ``MAX_EPOCH_STEP`` above the log. A
``LeaderElected`` further above the pool's current epoch than that was not
made by a lease (a forged or corrupt record): it is refused, so it cannot
fence a pool forever.
"""

from __future__ import annotations

from muster.events import BindRejected, BindRequested, Event, EvictionRequested, LeaderElected

MAX_EPOCH_STEP = 1000
"""How far above the log's highest epoch an election may go. Each election without a recorded
``LeaderElected`` (a leader that died between taking the lease and announcing it) leaves the lease
one epoch ahead of the log; a thousand of those in a row is no longer a crash loop but a bad record."""

# Event types are final (tagged Structs, never subclassed): an exact type test is enough, and it is
# what every event of the log passes through, so it is kept cheap.
_DECISIONS = frozenset({BindRequested, EvictionRequested})


def next_epoch(lease_epoch: int, log_epoch: int) -> int:
    """The epoch a new leader takes: above the lease's last one and the log's highest.

    A lease bucket that was lost and recreated starts again from nothing while the log
    remembers every epoch it saw; an epoch at or below the log's would have every decision
    refused. A lease record far above the log (``MAX_EPOCH_STEP``) is not trusted: the fence
    would refuse an election that high.
    """
    return min(max(lease_epoch, log_epoch) + 1, log_epoch + MAX_EPOCH_STEP)


def admissible(current: int, epoch: int) -> bool:
    """Whether an election to ``epoch`` may raise a pool whose epoch is ``current``."""
    return epoch <= current + MAX_EPOCH_STEP


class EpochFence:
    def __init__(self) -> None:
        self.epochs: dict[str, int] = {}
        self.refused = 0
        """How many elections were refused for an absurd epoch."""
        self.last_refused: LeaderElected | None = None

    def current(self, pool: str) -> int:
        return self.epochs.get(pool, 0)

    def is_stale(self, event: Event) -> bool:
        """A decision from an epoch older than its pool's current one."""
        return type(event) in _DECISIONS and event.epoch < self.epochs.get(event.pool, 0)

    def admit(self, event: Event) -> bool:
        """Read one event; True when it belongs in the allocator's state."""
        kind = type(event)
        if kind is LeaderElected:
            current = self.current(event.pool)
            if not admissible(current, event.epoch):
                self.refused += 1
                self.last_refused = event
                return False
            self.epochs[event.pool] = max(current, event.epoch)
            return True
        if kind is BindRejected:
            return False
        return not (kind in _DECISIONS and event.epoch < self.epochs.get(event.pool, 0))


def rejection(event: BindRequested, current_epoch: int) -> BindRejected:
    return BindRejected(
        job=event.job,
        pod=event.pod,
        node=event.node,
        pool=event.pool,
        epoch=event.epoch,
        current_epoch=current_epoch,
    )
