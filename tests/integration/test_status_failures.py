"""`muster status`'s reading of the projection: failed jobs and how their pods ended."""

from __future__ import annotations

import pytest
from muster.bus import Delivery
from muster.events import (
    BindRequested,
    NodeRegistered,
    NodeSpec,
    PodBound,
    PodFailed,
    PodGroupCreated,
    PodSpec,
    Resources,
)
from muster.store.queries import failure_text, status
from muster.store.sink import PostgresSink

pytestmark = pytest.mark.postgres


def job(name: str, pods: int) -> PodGroupCreated:
    return PodGroupCreated(name=name, queue="q", pods=[PodSpec(count=pods, resources=Resources(gpu=1))])


def started(name: str, pods: int) -> list:
    return [
        NodeRegistered(node=NodeSpec(name="n", resources=Resources(gpu=8))),
        *(BindRequested(job=name, pod=i, node="n", gpus=[i]) for i in range(pods)),
        *(PodBound(job=name, pod=i, node="n", gpus=[i]) for i in range(pods)),
    ]


async def projected_status(pool, *messages: list) -> dict:
    await PostgresSink(pool).apply([Delivery("t.events", i + 1, events) for i, events in enumerate(messages)])
    async with pool.acquire() as conn:
        return await status(conn)


async def test_a_failed_job_has_status_failed_its_failures_and_a_reason_saying_how(pg_pool):
    state = await projected_status(
        pg_pool,
        [job("crashes", 1)],
        started("crashes", 1),
        [PodFailed(job="crashes", pod=0, node="n", exit_code=3, reason="exited with code 3")],
    )
    crashes = state["jobs"]["crashes"]
    assert (crashes["status"], crashes["pods"]) == ("failed", [])
    assert crashes["failures"] == [{"pod": 0, "node": "n", "exit_code": 3, "reason": "exited with code 3"}]
    assert crashes["reason"] == "pod 0 failed on n with exit code 3: exited with code 3"


async def test_a_running_job_with_a_failed_pod_lists_the_failure_and_no_reason(pg_pool):
    state = await projected_status(
        pg_pool,
        [job("limps", 2)],
        started("limps", 2),
        [PodFailed(job="limps", pod=1, node="n", exit_code=1)],
    )
    limps = state["jobs"]["limps"]
    assert (limps["status"], limps["reason"], [f["pod"] for f in limps["failures"]]) == ("running", None, [1])
    assert limps["pods"] == [{"node": "n", "gpus": [0]}]


async def test_a_job_no_pod_of_which_failed_keeps_the_simulators_shape(pg_pool):
    state = await projected_status(pg_pool, [job("fine", 1)], started("fine", 1))
    assert set(state["jobs"]["fine"]) == {"status", "queue", "pods", "reason"}


def test_many_failures_read_as_the_first_and_how_many_more():
    failed = [{"pod": i, "node": "n", "exit_code": 1, "reason": None} for i in range(3)]
    assert failure_text(failed) == "pod 0 failed on n with exit code 1; 2 more pods failed"
    assert failure_text(failed[:2]).endswith("; 1 more pod failed")
