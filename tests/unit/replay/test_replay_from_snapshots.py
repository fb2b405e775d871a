"""Replay with snapshots: a window starts from one and costs the window; every snapshot passed is checked."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest
from muster import snapshots as sn
from muster.events import AllocatorConfigured, CycleCompleted
from muster.replay import LoggedMessage, Start, load_log, replay
from muster.replay_window import read_window
from muster.scheduler import snapshot as codec
from muster.scheduler.config import AllocatorConfig
from muster.scheduler.engine import Allocator
from muster.scheduler.fold import AllocatorFold, consumed_subjects, fold_name
from muster.subjects import Subjects, subject_matches

GOLDEN = Path(__file__).parents[2] / "golden" / "demo-4-nodes-30-jobs.jsonl"
SUBJECTS = Subjects("muster")


@pytest.fixture(scope="module")
def log():
    return load_log(GOLDEN)


def recorded_config(log) -> AllocatorConfig:
    for m in log:
        for e in m.events:
            if type(e).__name__ == "AllocatorConfigured":
                return msgspec.convert(e.config, AllocatorConfig)
    raise AssertionError("the golden log records its configuration")


def snapshot_at(log, seq: int, config: AllocatorConfig | None = None) -> Start:
    """What the live allocator would have stored after folding the message at ``seq`` (deciding with
    ``config``, by default the one the log records)."""
    config = config or recorded_config(log)
    fold = AllocatorFold(Allocator(config, frozenset({"default"})), "default")
    wanted = consumed_subjects(SUBJECTS, "default")
    for m in log:
        if m.seq > seq:
            break
        if any(subject_matches(p, m.subject) for p in wanted):
            fold.fold(m.seq, m.events)
    image = codec.image_of(fold)
    meta, data = sn.sealed(
        fold_name("default"),
        fold.watermark,
        image.data,
        digest=image.digest,
        format=codec.FORMAT,
        config_digest=config.digest(),
        config=msgspec.to_builtins(config),
    )
    return Start(meta, sn.opened(meta, data))


def watermarks(log) -> list[int]:
    return sorted(e.watermark for m in log for e in m.events if isinstance(e, CycleCompleted))


def test_a_window_replayed_from_a_snapshot_checks_the_same_cycles_as_from_the_start(log):
    marks = watermarks(log)
    start = snapshot_at(log, marks[len(marks) // 2])
    window_from = start.meta.seq + 1
    tail = [m for m in log if m.seq > start.meta.seq]

    from_snapshot = replay(tail, SUBJECTS, from_seq=window_from, starts={"default": start})
    from_the_start = replay(log, SUBJECTS, from_seq=window_from)

    assert from_snapshot.started_from == {"default": start.meta.seq}
    assert from_snapshot.divergences == 0
    assert from_snapshot.cycles == from_the_start.cycles > 0


def test_without_its_snapshot_the_tail_of_a_log_does_not_replay(log):
    # What the snapshot carries is needed: the tail alone lacks the nodes, queues and jobs.
    marks = watermarks(log)
    cut = marks[len(marks) // 2]
    tail = [m for m in log if m.seq > cut]
    assert replay(tail, SUBJECTS, from_seq=cut + 1).divergences > 0


def test_a_snapshot_the_fold_passes_is_checked_against_the_log(log):
    start = snapshot_at(log, watermarks(log)[3])
    report = replay(log, SUBJECTS, check=[start.meta])
    assert (report.snapshots_checked, report.snapshot_mismatches) == (1, [])


def test_a_snapshot_whose_state_is_not_what_the_log_gives_is_reported(log):
    start = snapshot_at(log, watermarks(log)[3])
    wrong = msgspec.structs.replace(start.meta, digest="0" * 64)
    report = replay(log, SUBJECTS, check=[wrong])
    assert report.snapshot_mismatches == [wrong.key]


def test_after_a_configuration_change_a_window_starts_from_a_snapshot_of_the_old_one(log):
    # The allocator snapshotted under another configuration, then restarted with the log's: its first
    # record after the snapshot announces it. The state folded is the same, whatever decided with it.
    marks = watermarks(log)
    old = msgspec.structs.replace(recorded_config(log), placement_gpu="spread")
    start = snapshot_at(log, marks[len(marks) // 2], old)
    assert start.meta.config_digest != recorded_config(log).digest()
    tail = [m for m in log if m.seq > start.meta.seq]
    i = next(i for i, m in enumerate(tail) if m.subject == SUBJECTS.decisions("default"))
    announced = next(e for m in log for e in m.events if isinstance(e, AllocatorConfigured))
    tail[i] = LoggedMessage(tail[i].seq, tail[i].subject, [announced, *tail[i].events])

    report = replay(tail, SUBJECTS, from_seq=start.meta.seq + 1, starts={"default": start})

    assert report.started_from == {"default": start.meta.seq}
    assert report.divergences == 0 and report.cycles > 0


class _Log:
    """The golden log as a log source."""

    def __init__(self, messages):
        self.messages = messages

    async def bounds(self):
        return self.messages[0].seq, self.messages[-1].seq

    async def read(self, start, end):
        return [m for m in self.messages if start <= m.seq <= end]


class _Store:
    def __init__(self, metas):
        self.metas = metas

    async def list(self):
        return self.metas


async def test_a_snapshot_of_an_older_image_format_is_neither_checked_nor_started_from(log):
    current = snapshot_at(log, watermarks(log)[3]).meta
    older = msgspec.structs.replace(current, format=codec.FORMAT - 1, seq=current.seq + 1)
    window = await read_window(_Log(log), _Store([current, older]), SUBJECTS, 1, None)
    assert window.check == [current]
