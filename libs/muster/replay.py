"""Re-derive every recorded allocator cycle from the log and compare, byte for byte.

A cycle's record is the decisions the allocator published for it, the
``PendingReasons`` parts of a cycle with many changed reasons, and its
``CycleCompleted`` (watermark, clock, epoch, changed pending reasons, config
digest), as ``muster.cycle_record`` builds it. Replay folds the log exactly as
the live allocator did (the same ``AllocatorFold``, the same subjects, in
stream order), re-runs each recorded cycle when the fold reaches its
watermark, and compares what it gets with what was recorded. The
configuration comes from the log's ``AllocatorConfigured``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import msgspec

from muster import snapshots as sn
from muster.bus.admission import Refused, check_events
from muster.cycle_record import cycle_record
from muster.events import (
    AllocatorConfigured,
    BindRequested,
    CycleCompleted,
    Event,
    EvictionRequested,
    LeaderElected,
    PendingReasons,
    decode_event,
)
from muster.scheduler import snapshot as codec
from muster.scheduler.config import AllocatorConfig
from muster.scheduler.engine import Allocator
from muster.scheduler.fold import AllocatorFold, consumed_subjects, fold_name
from muster.subjects import Subjects, subject_matches


@dataclass(frozen=True)
class LoggedMessage:
    """One message of the log: its stream sequence, subject and events."""

    seq: int
    subject: str
    events: list[Event]
    data: bytes = b""
    """The message's bytes where the source has them (the stream), for a projection kept verbatim."""


@dataclass
class RecordedCycle:
    pool: str
    completed: CycleCompleted
    published: list[Event]
    """What the cycle published before its CycleCompleted: its decisions, then any PendingReasons parts."""
    config: AllocatorConfig


@dataclass
class Divergence:
    pool: str
    cycle: int
    watermark: int
    clock: float
    recorded: list[Event]
    rederived: list[Event]
    read: list[tuple[int, int, Event]]
    """(seq, index, event) of what the cycle read since the previous recorded cycle."""

    def to_builtins(self) -> dict:
        return {
            "pool": self.pool,
            "cycle": self.cycle,
            "watermark": self.watermark,
            "clock": self.clock,
            "recorded": msgspec.to_builtins(self.recorded),
            "rederived": msgspec.to_builtins(self.rederived),
            "read": [{"seq": s, "index": i, "event": msgspec.to_builtins(e)} for s, i, e in self.read],
        }


@dataclass(frozen=True)
class Start:
    """A snapshot to start a pool's fold from, with its image."""

    meta: sn.SnapshotMeta
    image: bytes


@dataclass
class ReplayReport:
    cycles: int = 0
    events: int = 0
    divergences: int = 0
    first_divergence: Divergence | None = None
    seconds: float = 0.0
    pools: list[str] = field(default_factory=list)
    snapshots_checked: int = 0
    """Snapshots whose state digest was recomputed from the log."""
    snapshot_mismatches: list[str] = field(default_factory=list)
    """Keys of snapshots whose state is not what the log gives."""
    started_from: dict[str, int] = field(default_factory=dict)
    """pool -> the sequence of the snapshot its fold started from (absent: the log's start)."""
    unchecked: int = 0
    """Cycles a log that lacks its beginning (a stream with older messages purged) cannot re-derive:
    before the snapshot its pool's fold starts from. The archive (``--source postgres``) holds them."""

    @property
    def events_per_second(self) -> float:
        return self.events / self.seconds if self.seconds > 0 else 0.0

    def to_builtins(self) -> dict:
        return {
            "cycles": self.cycles,
            "events": self.events,
            "divergences": self.divergences,
            "first_divergence": self.first_divergence.to_builtins() if self.first_divergence else None,
            "events_per_second": round(self.events_per_second, 1),
            "snapshots_checked": self.snapshots_checked,
            "snapshot_mismatches": self.snapshot_mismatches,
            "started_from": self.started_from,
            "unchecked": self.unchecked,
        }


def _pool_of(subject: str, subjects: Subjects) -> str | None:
    prefix = subjects.decisions("")
    return subject[len(prefix) :] if subject.startswith(prefix) else None


def recorded_cycles(
    log: list[LoggedMessage], subjects: Subjects, configs: dict[str, AllocatorConfig] | None = None
) -> dict[str, list[RecordedCycle]]:
    """Every recorded cycle per pool, with what it published before its CycleCompleted.

    ``configs``: each pool's configuration before the log's first message, for a log that starts
    after its ``AllocatorConfigured`` (a window read from a snapshot on)."""
    out: dict[str, list[RecordedCycle]] = {}
    pending: dict[str, list[Event]] = {}
    configs = dict(configs or {})
    for message in log:
        pool = _pool_of(message.subject, subjects)
        if pool is None:
            continue
        for event in message.events:
            match event:
                case AllocatorConfigured(config=config):
                    configs[pool] = msgspec.convert(config, AllocatorConfig)
                case LeaderElected():
                    # A leader that died mid-cycle left decisions (or reasons) without their CycleCompleted:
                    # they belong to no recorded cycle (and its decisions are fenced off anyway).
                    pending.pop(pool, None)
                case BindRequested() | EvictionRequested() | PendingReasons():
                    pending.setdefault(pool, []).append(event)
                case CycleCompleted():
                    record = RecordedCycle(
                        pool, event, pending.pop(pool, []), configs.get(pool, AllocatorConfig())
                    )
                    out.setdefault(pool, []).append(record)
    return out


def replay(
    log: Iterable[LoggedMessage],
    subjects: Subjects,
    *,
    from_seq: int = 0,
    to_seq: int | None = None,
    engine: Callable[[AllocatorConfig, str], Allocator] = lambda config, pool: Allocator(
        config, frozenset({pool})
    ),
    starts: dict[str, Start] | None = None,
    check: Iterable[sn.SnapshotMeta] = (),
) -> ReplayReport:
    """Replay every recorded cycle whose watermark lies in [from_seq, to_seq].

    A pool's fold starts from ``starts[pool]`` where that snapshot was taken under the configuration
    of the pool's first cycle to check and no later than its watermark; the log must then hold every
    message after the snapshot. Otherwise it folds from the log's first message. ``check``: snapshots
    whose state digest to recompute where the fold passes them.
    """
    started = time.perf_counter()
    starts = starts or {}
    messages = sorted((_as_admitted(m, subjects) for m in log), key=lambda m: m.seq)
    report = ReplayReport(events=sum(len(m.events) for m in messages))
    initial = {
        pool: msgspec.convert(start.meta.config, AllocatorConfig)
        for pool, start in starts.items()
        if start.meta.config
    }
    cycles = recorded_cycles(messages, subjects, initial)
    report.pools = sorted(cycles)
    to_check: dict[tuple[str, int, str], sn.SnapshotMeta] = {
        (m.fold, m.seq, m.config_digest): m for m in check
    }
    partial = not messages or messages[0].seq > 1
    for pool, records in sorted(cycles.items()):
        _replay_pool(
            pool,
            records,
            messages,
            subjects,
            from_seq,
            to_seq,
            engine,
            report,
            starts.get(pool),
            to_check,
            partial,
        )
    report.seconds = time.perf_counter() - started
    return report


def _replay_pool(
    pool, records, messages, subjects, from_seq, to_seq, engine, report, start, to_check, partial
) -> None:
    wanted = consumed_subjects(subjects, pool)
    name = fold_name(pool)
    records = sorted(records, key=lambda r: (r.completed.watermark, r.completed.cycle))
    fold: AllocatorFold | None = None
    config: AllocatorConfig | None = None
    digest = ""
    read: list[tuple[int, int, Event]] = []
    i = 0

    def advance(m: LoggedMessage) -> None:
        fold.fold(m.seq, m.events)
        meta = to_check.get((name, m.seq, digest))
        if meta is not None:
            report.snapshots_checked += 1
            if codec.digest_of(fold) != meta.digest:
                report.snapshot_mismatches.append(meta.key)

    def restart(record: RecordedCycle) -> tuple[AllocatorFold, int]:
        """A fold as a restarted allocator builds it: from a snapshot of its configuration, or the log."""
        nonlocal digest
        new = AllocatorFold(engine(record.config, pool), pool)
        digest = record.config.digest()
        after = 0
        # A snapshot of another configuration serves as well: the fold's state is what the log says,
        # and the image refuses a state folded another way (other pools, forgetting, usage window).
        if start is not None and start.meta.seq <= record.completed.watermark:
            try:
                codec.restore_image(new, start.image, start.meta.digest)
            except ValueError:
                return new, after
            after = start.meta.seq
            report.started_from[pool] = after
        return new, after

    def run_due(upto: int) -> None:
        nonlocal i, fold, config, read
        while i < len(records) and records[i].completed.watermark < upto:
            record = records[i]
            i += 1
            c = record.completed
            if fold is None and c.watermark < from_seq:
                # Before the window: the fold is built at the window's first cycle, from a snapshot or
                # the log, without re-running the cycles before it.
                continue
            if fold is None and partial and start is not None and c.watermark < start.meta.seq:
                # Neither the log (it lacks its beginning) nor the snapshot (it is later) holds its state.
                report.unchecked += 1
                continue
            if fold is None or record.config != config:
                # A new configuration means a restarted allocator: it rebuilt its state from the log.
                fold, after = restart(record)
                config = record.config
                for m in messages:
                    if m.seq > c.watermark:
                        break
                    if m.seq > after and any(subject_matches(p, m.subject) for p in wanted):
                        advance(m)
            if c.watermark < from_seq or (to_seq is not None and c.watermark > to_seq):
                read = []
                continue
            out = fold.rerun(c)
            report.cycles += 1
            got = _in_recorded_form(out.decisions, out.completed, record)
            want = [*record.published, c]
            if _canonical(got) != _canonical(want):
                report.divergences += 1
                if report.first_divergence is None:
                    report.first_divergence = Divergence(pool, c.cycle, c.watermark, c.clock, want, got, read)
            read = []

    for message in messages:
        run_due(message.seq)
        if (
            fold is not None
            and message.seq > fold.watermark
            and any(subject_matches(p, message.subject) for p in wanted)
        ):
            advance(message)
            read.extend((message.seq, index, event) for index, event in enumerate(message.events))
    run_due(float("inf"))


def _in_recorded_form(
    decisions: list[Event], completed: CycleCompleted, record: RecordedCycle
) -> list[Event]:
    """A re-derived cycle as the allocator records it now: its reasons in parts when they are many.

    A record without parts may predate them: each reason then sits in the CycleCompleted, which NATS took
    up to 1 MB, more than a part's budget. Such a record is compared whole."""
    if any(type(e) is PendingReasons for e in record.published):
        return cycle_record(decisions, completed)
    return [*decisions, completed]


def log_events(log: Iterable[LoggedMessage], subjects: Subjects) -> list[Event]:
    """Every event of ``log`` in stream order, as live readers take them (a refused message carries none)."""
    messages = sorted((_as_admitted(m, subjects) for m in log), key=lambda m: m.seq)
    return [event for message in messages for event in message.events]


def _as_admitted(message: LoggedMessage, subjects: Subjects) -> LoggedMessage:
    """The message as live readers take it: a message they refuse is read as carrying no events.

    The stream's reader already empties those; a log from Postgres or a file may predate the check.
    """
    try:
        check_events(subjects, message.subject, message.events)
    except Refused:
        return LoggedMessage(message.seq, message.subject, [], message.data)
    return message


def _canonical(events: list[Event]) -> bytes:
    # Postgres' jsonb keeps object keys in its own order; compare with keys sorted.
    return msgspec.json.encode(events, order="sorted")


# -- sources --------------------------------------------------------------------


async def log_from_nats(bus) -> list[LoggedMessage]:
    return [LoggedMessage(d.seq, d.subject, d.events, d.data) async for d in bus.read()]


async def log_from_postgres(conn) -> list[LoggedMessage]:
    """The log as the projector kept it: for history older than the stream's retention."""
    rows = await conn.fetch(
        "SELECT stream_seq, idx, subject, payload::text FROM events ORDER BY stream_seq, idx"
    )
    return messages_of_rows(rows)


def messages_of_rows(rows) -> list[LoggedMessage]:
    """Rows of the ``events`` table, ordered by (stream_seq, idx), as the messages they came in."""
    out: list[LoggedMessage] = []
    undecodable: set[int] = set()
    for row in rows:
        try:
            event = decode_event(row["payload"].encode())
        except (msgspec.MsgspecError, RecursionError):
            # Projected before readers refused such messages: read, like them, as carrying nothing.
            undecodable.add(row["stream_seq"])
            continue
        if out and out[-1].seq == row["stream_seq"]:
            out[-1].events.append(event)
        else:
            out.append(LoggedMessage(row["stream_seq"], row["subject"], [event]))
    return [LoggedMessage(m.seq, m.subject, []) if m.seq in undecodable else m for m in out]


def save_log(log: Iterable[LoggedMessage], path) -> None:
    """A log as JSON lines ``{"seq", "subject", "events"}``: shareable, replayable with ``--log``."""
    with open(path, "wb") as out:
        for m in log:
            out.write(msgspec.json.encode({"seq": m.seq, "subject": m.subject, "events": m.events}) + b"\n")


class _Line(msgspec.Struct):
    seq: int
    subject: str
    events: list[Event]


def load_log(path) -> list[LoggedMessage]:
    decoder = msgspec.json.Decoder(_Line)
    with open(path, "rb") as lines:
        return [
            LoggedMessage(x.seq, x.subject, x.events) for x in map(decoder.decode, filter(bytes.strip, lines))
        ]
