"""What replay reads for a window of history: the window, and just enough around it.

Replaying the cycles whose watermark lies in [from, to] needs each pool's
state before its first such cycle, and each cycle's record, published a
little after its watermark. With snapshots (``muster.snapshots``) the state
comes from the newest snapshot of the pool taken at or before its
watermark, under the configuration of that first cycle if there is one
(else another's: the state folded is the same); the log is read from just
after the snapshot. A pool without one is folded from the start of
the log. So a window's cost follows the window and the snapshot interval,
not the length of the history.

The log comes from the stream (``StreamLog``) or, for history the stream no
longer holds, from the projector's archive in Postgres (``ArchiveLog``):
either is read by range, so a window costs the same from both.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from muster import snapshots as sn
from muster.events import CycleCompleted
from muster.replay import LoggedMessage, Start, messages_of_rows, recorded_cycles
from muster.scheduler import snapshot as codec
from muster.scheduler.fold import fold_name
from muster.subjects import Subjects

RECORD_SLACK = 10_000
"""How far past the window to look for the records of its last cycles, at most: a cycle's record is
published as soon as it ran, a few messages after its watermark."""
CHUNK = 200


@dataclass
class Window:
    """The messages to replay, and where each pool's fold starts."""

    messages: list[LoggedMessage]
    starts: dict[str, Start] = field(default_factory=dict)
    check: list[sn.SnapshotMeta] = field(default_factory=list)
    """Snapshots inside what was read, whose digests replay recomputes."""


class LogSource(Protocol):
    async def bounds(self) -> tuple[int, int]:
        """The first and last sequence the source holds."""
        ...

    async def read(self, start: int, end: int) -> list[LoggedMessage]:
        """The messages with sequences in [start, end], in order."""
        ...


class StreamLog:
    """The stream, as far back as its retention keeps it."""

    def __init__(self, bus):
        self.bus = bus

    async def bounds(self) -> tuple[int, int]:
        return await self.bus.first_seq(), await self.bus.last_seq()

    async def read(self, start: int, end: int) -> list[LoggedMessage]:
        return [
            LoggedMessage(d.seq, d.subject, d.events, d.data)
            async for d in self.bus.read(start_seq=start, end_seq=end)
        ]


class ArchiveLog:
    """The projector's archive (the ``events`` table): all of history, up to what it has projected."""

    def __init__(self, conn):
        self.conn = conn

    async def bounds(self) -> tuple[int, int]:
        row = await self.conn.fetchrow("SELECT min(stream_seq) AS first, max(stream_seq) AS last FROM events")
        return (row["first"] or 1), (row["last"] or 0)

    async def read(self, start: int, end: int) -> list[LoggedMessage]:
        rows = await self.conn.fetch(
            "SELECT stream_seq, idx, subject, payload::text FROM events"
            " WHERE stream_seq BETWEEN $1 AND $2 ORDER BY stream_seq, idx",
            start,
            end,
        )
        return messages_of_rows(rows)


async def _read(log: LogSource, start: int, end: int) -> list[LoggedMessage]:
    return [] if end < start else await log.read(start, end)


async def read_window(log: LogSource, store, subjects: Subjects, from_seq: int, to_seq: int | None) -> Window:
    """The log for replaying cycles with watermarks in [from_seq, to_seq]."""
    first, last = await log.bounds()
    # A snapshot of another image format wrote its state another way: nothing here can restore it or
    # recompute its digest (a fold of the same log images other bytes once the format changed).
    listed = await store.list() if store is not None else []
    metas = [m for m in listed if m.fold.startswith("allocator-") and m.format == codec.FORMAT]
    if from_seq <= first <= 1:
        # The whole history, and the stream still holds its beginning.
        return Window(await _read(log, first, last), check=metas)
    low = max(from_seq, first)
    to = last if to_seq is None else min(to_seq, last)
    window = await _read(log, low, to)
    window += await _records_after(log, subjects, window, to, last)
    # Each pool's first cycle inside the window: the state replay needs is the state just before it.
    firsts: dict[str, CycleCompleted] = {}
    for pool, records in recorded_cycles(window, subjects).items():
        inside = [r.completed for r in records if low <= r.completed.watermark <= to]
        if inside:
            firsts[pool] = min(inside, key=lambda c: (c.watermark, c.cycle))
    starts: dict[str, Start] = {}
    read_from = low
    for pool, c in sorted(firsts.items()):
        start = await _start_for(store, metas, fold_name(pool), c, first, to)
        if start is None:
            read_from = first
        else:
            starts[pool] = start
            read_from = min(read_from, start.meta.seq + 1)
    messages = await _read(log, read_from, low - 1) + window
    since = messages[0].seq if messages else low
    return Window(messages, starts, [m for m in metas if since <= m.seq <= to])


async def _start_for(store, metas, fold: str, c: CycleCompleted, first: int, to: int) -> Start | None:
    """The snapshot a pool's fold starts from for a window whose first cycle is ``c``: the newest at or
    before it; or, where the stream lacks what came before (purged), the oldest it can use at all
    (replay then leaves the cycles before that snapshot unchecked)."""
    own = [m for m in metas if m.fold == fold]
    kw = {"format": codec.FORMAT, "at_least": first - 1}
    # One of the cycle's configuration first; else one of another, which folded the same state.
    candidates = sn.choose(own, at_most=c.watermark, config_digest=c.config_digest, **kw)
    candidates = candidates or sn.choose(own, at_most=c.watermark, **kw)
    if not candidates and first > 1:
        candidates = sorted(sn.choose(own, at_most=to, **kw), key=lambda m: m.seq)
    for meta in candidates:
        try:
            return Start(meta, sn.opened(meta, await store.get(meta)))
        except sn.SnapshotError:
            continue
    return None


async def _records_after(
    log: LogSource, subjects: Subjects, window: list[LoggedMessage], to: int, last: int
) -> list[LoggedMessage]:
    """Messages after ``to`` up to the records of every cycle whose watermark is at or before it."""
    seen = recorded_cycles(window, subjects)
    pools = set(seen)
    done = {pool for pool, records in seen.items() if any(r.completed.watermark > to for r in records)}
    out: list[LoggedMessage] = []
    seq = to + 1
    # At least one chunk: the window's only cycles may all be recorded after it.
    while seq <= min(last, to + RECORD_SLACK) and (seq == to + 1 or not pools <= done):
        chunk = await _read(log, seq, min(last, seq + CHUNK - 1, to + RECORD_SLACK))
        out += chunk
        seq += CHUNK
        for pool, records in recorded_cycles(chunk, subjects).items():
            pools.add(pool)
            if any(r.completed.watermark > to for r in records):
                done.add(pool)
    return out
