"""Recorded event logs, replayed: the allocator re-derives every decision, the projector every row.

To re-record after an intended change of decisions:
``MUSTER_HOME=/tmp/g muster demo --nodes 4 --jobs 30 && MUSTER_HOME=/tmp/g muster replay --save tests/golden/demo-4-nodes-30-jobs.jsonl``
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from muster.bus import Delivery
from muster.replay import load_log, replay
from muster.scheduler.engine import Allocator
from muster.store.queries import status
from muster.store.sink import PostgresSink
from muster.subjects import Subjects

GOLDEN = sorted(Path(__file__).parent.glob("*.jsonl"))
SUBJECTS = Subjects("muster")


@pytest.mark.parametrize("path", GOLDEN, ids=lambda p: p.stem)
def test_replaying_a_recorded_history_re_derives_every_decision(path):
    report = replay(load_log(path), SUBJECTS)
    assert report.cycles > 0
    assert report.divergences == 0, report.first_divergence and report.first_divergence.to_builtins()


class WallClockAllocator(Allocator):
    """A deliberately broken variant: decision code that reads the wall clock."""

    def cycle(self, clock, **kwargs):
        return super().cycle(time.time(), **kwargs)


def test_replay_catches_an_allocator_that_reads_the_wall_clock():
    report = replay(
        load_log(GOLDEN[0]),
        SUBJECTS,
        engine=lambda config, pool: WallClockAllocator(config, frozenset({pool})),
    )
    assert report.divergences == report.cycles > 0
    first = report.first_divergence
    assert first.recorded[-1].clock != first.rederived[-1].clock


class ForgetfulAllocator(Allocator):
    """Another: it drops completions it reads, so its state is no longer a fold of the log."""

    def apply(self, event):
        if type(event).__name__ != "PodCompleted":
            super().apply(event)


def test_replay_catches_an_allocator_whose_state_is_not_a_fold_of_the_log():
    report = replay(
        load_log(GOLDEN[0]),
        SUBJECTS,
        engine=lambda config, pool: ForgetfulAllocator(config, frozenset({pool})),
    )
    assert report.divergences > 0


def test_replay_checks_only_the_cycles_in_the_requested_range():
    log = load_log(GOLDEN[0])
    everything = replay(log, SUBJECTS)
    middle = log[len(log) // 2].seq
    later = replay(log, SUBJECTS, from_seq=middle)
    assert 0 < later.cycles < everything.cycles and later.divergences == 0


@pytest.mark.postgres
@pytest.mark.parametrize("path", GOLDEN, ids=lambda p: p.stem)
async def test_projecting_a_recorded_history_gives_its_final_state(path, pg_pool):
    log = load_log(path)
    sink = PostgresSink(pg_pool)
    deliveries = [Delivery(m.subject, m.seq, m.events) for m in log]
    for start in range(0, len(deliveries), 50):
        await sink.apply(deliveries[start : start + 50])
    await sink.apply(deliveries)  # everything again: redelivery changes nothing
    async with pg_pool.acquire() as conn:
        assert await conn.fetchval("SELECT count(*) FROM events") == sum(len(m.events) for m in log)
        state = await status(conn)
    assert state["jobs"] and all(job["status"] == "completed" for job in state["jobs"].values())
    assert all(node["free"] == node["total"] for node in state["nodes"].values())
