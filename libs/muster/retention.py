"""Stream retention: how far the log may be purged without losing anything.

The stream is the system's working log; Postgres' ``events`` table, written
by the projector, is its archive. A message may leave the stream only when
three things hold:

- the archive has it (the projector's checkpoint is at or past it);
- every fold that must start again can do so without it: each required
  fold has a snapshot at or past it (a fold restarts from its newest
  snapshot and the messages after it);
- it is older than the newest ``keep`` messages, which stay for readers
  that look back a little (``muster logs``, a window replay without a
  snapshot of its own).

Retention is off unless ``keep`` is set. Nothing here purges by age or
size alone: a fold that stops taking snapshots holds the stream where it
is, and the keeper says which fold does.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

log = logging.getLogger(__name__)


DEFAULT_REQUIRES = "allocator-default,binder,nodewatch,queue-controller,podgrouper"


@dataclass(frozen=True)
class RetentionPolicy:
    keep: int
    """Newest messages always kept."""
    requires: frozenset[str]
    """Folds that must have a snapshot before anything they read is purged (besides every fold that
    has snapshots at all)."""

    @classmethod
    def from_env(cls, env: dict[str, str]) -> RetentionPolicy | None:
        """``MUSTER_STREAM_KEEP`` turns retention on; ``MUSTER_RETENTION_REQUIRES`` lists required
        folds, comma-separated (default: the default pool's allocator, the binder, the node monitor,
        the queue-controller and the podgrouper; machine agents count once they have a snapshot)."""
        keep = env.get("MUSTER_STREAM_KEEP")
        if not keep:
            return None
        try:
            count = int(keep)
        except ValueError:
            raise ValueError(f"MUSTER_STREAM_KEEP: not a number of messages: {keep!r}") from None
        if count < 1:
            raise ValueError(f"MUSTER_STREAM_KEEP: must be at least 1, not {count}")
        requires = env.get("MUSTER_RETENTION_REQUIRES", DEFAULT_REQUIRES)
        return cls(count, frozenset(name.strip() for name in requires.split(",") if name.strip()))


@dataclass(frozen=True)
class Floor:
    """The first sequence the stream must keep, and what holds it there."""

    seq: int
    held_by: str


def purge_floor(
    policy: RetentionPolicy, *, first: int, last: int, archived: int, snapshots: dict[str, int]
) -> Floor:
    """Where the stream may start: everything before ``Floor.seq`` may be purged.

    ``archived``: the last sequence the archive holds. ``snapshots``: each fold's newest snapshot
    sequence. Never below ``first`` (nothing to undo) and never above what any rule allows.
    """
    bounds = [Floor(last - policy.keep + 1, f"the newest {policy.keep} messages")]
    bounds.append(Floor(archived + 1, "the archive (the projector's checkpoint)"))
    for fold in sorted(policy.requires | set(snapshots)):
        newest = snapshots.get(fold)
        bounds.append(Floor(1 if newest is None else newest + 1, f"{fold}'s newest snapshot"))
    lowest = min(bounds, key=lambda b: b.seq)
    return Floor(max(first, lowest.seq), lowest.held_by)


async def newest_snapshots(js, stream: str) -> dict[str, int]:
    """Each fold's newest snapshot sequence, over every owner's store that exists (none is created)."""
    from muster.snapshots import existing_stores

    newest: dict[str, int] = {}
    for _, store in await existing_stores(js, stream):
        for meta in await store.list():
            newest[meta.fold] = max(newest.get(meta.fold, 0), meta.seq)
    return newest


async def keep_bounded(bus, policy: RetentionPolicy, archived: int) -> Floor:
    """One look: purge the stream below its floor; the floor."""
    newest = await newest_snapshots(bus.js, bus.subjects.stream)
    first, last = await bus.first_seq(), await bus.last_seq()
    floor = purge_floor(policy, first=first, last=last, archived=archived, snapshots=newest)
    if floor.seq > first:
        await bus.js.purge_stream(bus.subjects.stream, seq=floor.seq)
        log.info("stream purged below sequence %d (held there by %s)", floor.seq, floor.held_by)
    return floor
