"""A cycle in which every job of a large backlog changes reason is published in several messages, and the
allocator carries on.

Raising the limit of a queue that holds a backlog gives each of its jobs a new pending reason in one
cycle: about 2 MB of reasons, twice what NATS takes in one message (the allocator used to crash there,
and again on every restart). The cycle's record now carries them in ``PendingReasons`` parts.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

import pytest
from muster.bus.base import MAX_ENVELOPE_BYTES
from muster.events import (
    BindRequested,
    CycleCompleted,
    NodeSpec,
    PendingReasons,
    QueueResource,
    QueueSpec,
    Resources,
)
from muster.grouping.muster_job import manifest
from muster.replay import LoggedMessage, log_from_nats, replay
from muster.runtime.settings import Endpoints
from muster.scheduler.config import AllocatorConfig
from muster.sdk import Client
from muster.store import timeline

from tests.e2e.in_process import LiveSystem, live_system

pytestmark = [pytest.mark.nats, pytest.mark.postgres, pytest.mark.slow]

BACKLOG = 20_000
"""Jobs held by the capped queue."""
SUBMISSION_BATCH = 2_000
NATS_MAX_PAYLOAD = 1024 * 1024
WAIT_SECONDS = 60.0
NEW_REASON = "%limit of 1 gpu%"


@dataclass
class Run:
    """What the live system did, read once for every test of the module."""

    endpoints: Endpoints
    log: list[LoggedMessage]
    record: list[LoggedMessage]
    """The messages of the cycle that gave every job a new reason."""
    projected: int
    """Jobs whose projected reason is the new one."""
    why: list[timeline.Entry]
    """``muster why`` of a job whose new reason came in a part."""


def capped(limit: float) -> QueueSpec:
    return QueueSpec(name="capped", resources={"gpu": QueueResource(quota=0, limit=limit)})


def one_gpu_job(name: str, queue: str) -> dict:
    return manifest({"name": name, "queue": queue, "pods": [{"count": 1, "resources": {"gpu": 1}}]})


async def until(live: LiveSystem, sql: str, want: int, what: str) -> None:
    """Wait until the projection, caught up with the log, answers ``want`` to ``sql``; fail if a service stops."""
    deadline = time.monotonic() + WAIT_SECONDS
    got = None
    while time.monotonic() < deadline:
        live.check()
        if await live.projected():
            got = await live.db.fetchval(sql)
            if got == want:
                return
        await asyncio.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}: {got} of {want}")


def parts_of(messages: list[LoggedMessage]) -> list[PendingReasons]:
    return [e for m in messages for e in m.events if isinstance(e, PendingReasons)]


async def backlog_raised(servers: Endpoints, home) -> Run:
    """A backlog held at limit 0, the limit raised to 1, then one job in another queue."""
    async with live_system(servers, home, AllocatorConfig()) as live:
        client = await Client.connect(live.endpoints)
        try:
            gpus = Resources(gpu=8, cpu=64_000, memory=2**39)
            await client.register_nodes([NodeSpec(name="n-1", resources=gpus)], tag="large")
            await client.apply_queues(
                [capped(0), QueueSpec(name="open", resources={"gpu": QueueResource(quota=8)})]
            )
            names = [f"backlog-{i:05d}" for i in range(BACKLOG)]
            for b in range(0, BACKLOG, SUBMISSION_BATCH):
                batch = [one_gpu_job(name, "capped") for name in names[b : b + SUBMISSION_BATCH]]
                await client.submit(batch, uid=f"backlog/{b}")
            waiting = "SELECT count(*) FROM jobs WHERE reason LIKE '%limit of 0 gpu%'"
            await until(live, waiting, BACKLOG, "the backlog waiting")
            before = await live.bus.last_seq()
            # One GPU more: one job runs, every other one waits for another reason, all in one cycle.
            await client.apply_queues([capped(1)])
            changed = f"SELECT count(*) FROM jobs WHERE reason LIKE '{NEW_REASON}'"
            await until(live, changed, BACKLOG - 1, "the backlog's new reasons")
            await client.submit([one_gpu_job("after", "open")], uid="after")
            running = "SELECT count(*) FROM jobs WHERE name = 'after' AND status = 'running'"
            await until(live, running, 1, "a job submitted after the large cycle running")
            log = await log_from_nats(live.bus)
            decisions = live.endpoints.subjects.decisions("default")
            after = [m for m in log if m.seq > before and m.subject == decisions]
            parts = parts_of(after)
            assert parts, "the large cycle's reasons came in parts"
            record = [m for m in after if any(getattr(e, "cycle", None) == parts[0].cycle for e in m.events)]
            in_part = next(job for job, reason in parts[0].reasons.items() if reason)
            return Run(
                live.endpoints,
                log,
                record,
                await live.db.fetchval(changed),
                await timeline.load(live.db, in_part),
            )
        finally:
            await client.close()


@pytest.fixture(scope="module")
def run(servers, tmp_path_factory) -> Run:
    return asyncio.run(backlog_raised(servers, tmp_path_factory.mktemp("large-cycle")))


def test_the_cycle_is_published_in_several_messages_each_within_the_envelope_limit(run):
    sizes = [len(m.data) for m in run.record]
    assert sum(sizes) > NATS_MAX_PAYLOAD
    assert len(sizes) > 1 and max(sizes) < MAX_ENVELOPE_BYTES + 1024


def test_its_parts_and_completion_carry_every_changed_reason_once(run):
    (completed,) = [e for m in run.record for e in m.events if isinstance(e, CycleCompleted)]
    jobs = [
        job for reasons in [*(p.reasons for p in parts_of(run.record)), completed.pending] for job in reasons
    ]
    # 19,999 new reasons, and one job that runs now no longer waits.
    assert len(jobs) == len(set(jobs)) == BACKLOG


def test_the_projection_and_muster_why_show_the_reasons_the_parts_carry(run):
    assert run.projected == BACKLOG - 1
    assert "limit of 1 gpu" in [e for e in run.why if e.kind == timeline.WAITING][-1].text


def test_later_cycles_still_decide(run):
    assert any(isinstance(e, BindRequested) and e.job == "after" for m in run.log for e in m.events)


def test_the_log_replays_without_divergence(run):
    report = replay(run.log, run.endpoints.subjects)
    assert report.divergences == 0, report.first_divergence and report.first_divergence.to_builtins()
