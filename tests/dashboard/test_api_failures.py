"""Failed jobs in the dashboard's JSON API: their status, a filter for it, how each pod ended."""

from __future__ import annotations

import pytest
from muster.events import (
    BindRequested,
    NodeRegistered,
    NodeSpec,
    PodBound,
    PodCompleted,
    PodFailed,
    PodGroupCreated,
    PodSpec,
    QueueSpec,
    QueueUpserted,
    Resources,
)

from tests.dashboard.api_client import api_over, get

pytestmark = pytest.mark.postgres

REASON = "exited with code 3: CUDA error: out of memory"


def history() -> list[list]:
    """`crashes` (2 pods) loses pod 0 to exit code 3 and ends when pod 1 completes; `steady` runs on."""
    pods = [PodSpec(count=2, resources=Resources(gpu=1))]
    return [
        [
            QueueUpserted(queue=QueueSpec(name="research")),
            QueueUpserted(queue=QueueSpec(name="vision", parent="research")),
        ],
        [NodeRegistered(node=NodeSpec(name="gpu-a", resources=Resources(gpu=4, cpu=8000, memory=2**34)))],
        [
            PodGroupCreated(name="crashes", queue="vision", min_available=2, pods=pods),
            PodGroupCreated(name="steady", queue="vision", pods=[PodSpec(resources=Resources(gpu=1))]),
        ],
        [
            BindRequested(job="crashes", pod=0, node="gpu-a", gpus=[0], cycle=1),
            BindRequested(job="crashes", pod=1, node="gpu-a", gpus=[1], cycle=1),
            BindRequested(job="steady", pod=0, node="gpu-a", gpus=[2], cycle=1),
        ],
        [
            PodBound(job="crashes", pod=0, node="gpu-a", gpus=[0]),
            PodBound(job="crashes", pod=1, node="gpu-a", gpus=[1]),
            PodBound(job="steady", pod=0, node="gpu-a", gpus=[2]),
        ],
        [PodFailed(job="crashes", pod=0, node="gpu-a", exit_code=3, reason=REASON, at=12.0)],
        [PodCompleted(job="crashes", pod=1, node="gpu-a")],
    ]


@pytest.fixture
async def client(pg_pool):
    async for http in api_over(pg_pool, history()):
        yield http


async def test_the_failed_filter_lists_only_failed_jobs_each_saying_how_it_failed(client):
    found = await get(client, "/api/jobs?status=failed")
    assert [(j["name"], j["status"]) for j in found["jobs"]] == [("crashes", "failed")]
    [crashes] = found["jobs"]
    assert crashes["reason"] == f"pod 0 failed on gpu-a with exit code 3: {REASON}"
    assert crashes["failures"] == [{"pod": 0, "node": "gpu-a", "exit_code": 3, "reason": REASON}]


async def test_a_job_without_a_failed_pod_has_no_failures(client):
    [steady] = (await get(client, "/api/jobs?status=running"))["jobs"]
    assert (steady["name"], steady["failures"], steady["reason"]) == ("steady", [], None)


async def test_failed_jobs_are_counted_in_the_overview_and_in_their_queues(client):
    assert (await get(client, "/api/overview"))["jobs"]["failed"] == 1
    [research] = (await get(client, "/api/queues"))["queues"]
    assert research["jobs"]["failed"] == 1 and research["children"][0]["jobs"]["failed"] == 1


async def test_a_failed_jobs_pods_say_how_each_ended(client):
    job = await get(client, "/api/jobs/crashes")
    assert [(p["idx"], p["status"], p["exit_code"], p["failure_reason"]) for p in job["pods"]] == [
        (0, "failed", 3, REASON),
        (1, "completed", None, None),
    ]


async def test_the_why_timeline_shows_the_failure_with_its_pod_node_exit_code_and_reason(client):
    timeline = (await get(client, "/api/jobs/crashes/why"))["timeline"]
    assert [e["kind"] for e in timeline] == ["created", "bind_requested", "bound", "failed", "completed"]
    failure = timeline[3]
    assert failure["text"] == f"pod 0 failed on gpu-a with exit code 3: {REASON}"
    assert (failure["exit_code"], failure["reason"], failure["clock"]) == (3, REASON, 12.0)
    assert [(p["pod"], p["node"]) for p in failure["pods"]] == [(0, "gpu-a")]


async def test_the_status_filter_names_failed_among_the_statuses_it_accepts(client):
    body = await get(client, "/api/jobs?status=crashed", status=400)
    assert body["field"] == "query.status" and "failed" in body["error"]
