"""Fencing by epoch: decisions of a deposed leader are void once its successor is elected.

``LeaderElected`` on the log raises a pool's epoch; from there on, a
``BindRequested`` or ``EvictionRequested`` carrying an older epoch is
stale. The binder answers a stale bind with ``BindRejected`` and does not
act; the allocator (live and in replay) never folds a stale decision, nor
the rejection of one, into its state. Everything here is a function of the
log, so every reader reaches the same verdicts.
"""

from __future__ import annotations

from muster.events import BindRejected, BindRequested, Event, EvictionRequested, LeaderElected

# Event types are final (tagged Structs, never subclassed): an exact type test is enough, and it is
# what every event of the log passes through, so it is kept cheap.
_DECISIONS = frozenset({BindRequested, EvictionRequested})


class EpochFence:
    def __init__(self) -> None:
        self.epochs: dict[str, int] = {}

    def current(self, pool: str) -> int:
        return self.epochs.get(pool, 0)

    def is_stale(self, event: Event) -> bool:
        """A decision from an epoch older than its pool's current one."""
        return type(event) in _DECISIONS and event.epoch < self.epochs.get(event.pool, 0)

    def admit(self, event: Event) -> bool:
        """Read one event; True when it belongs in the allocator's state."""
        kind = type(event)
        if kind is LeaderElected:
            self.epochs[event.pool] = max(self.current(event.pool), event.epoch)
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
