"""The dashboard's JSON API over a real Postgres projection, written by the projector's own sink."""

from __future__ import annotations

import pytest
from muster.events import (
    BindRequested,
    CycleCompleted,
    EvictionRequested,
    NodeRegistered,
    NodeSpec,
    PodBound,
    PodGroupCreated,
    PodSpec,
    QueueResource,
    QueueSpec,
    QueueStatus,
    QueueUpserted,
    Resources,
)

from tests.dashboard.api_client import api_over, get

pytestmark = pytest.mark.postgres

GiB = 1024**3


def history() -> list[list]:
    """Messages in stream order: a department with two teams, two nodes, three jobs in their lives."""
    return [
        [
            QueueUpserted(
                queue=QueueSpec(name="research", resources={"gpu": QueueResource(quota=8)}, order=0)
            ),
            QueueUpserted(
                queue=QueueSpec(
                    name="vision",
                    parent="research",
                    order=1,
                    resources={"gpu": QueueResource(quota=4, limit=6), "cpu": QueueResource(quota=16000)},
                )
            ),
            QueueUpserted(queue=QueueSpec(name="nlp", parent="research", order=2)),
        ],
        [
            NodeRegistered(
                node=NodeSpec(
                    name="gpu-a",
                    gpu_model="H100",
                    resources=Resources(gpu=4, gpu_memory=80 * GiB, cpu=64000, memory=512 * GiB),
                )
            ),
            NodeRegistered(
                node=NodeSpec(name="gpu-b", resources=Resources(gpu=2, cpu=32000, memory=256 * GiB))
            ),
        ],
        [
            PodGroupCreated(
                name="vision-train",
                queue="vision",
                min_available=2,
                pods=[PodSpec(count=2, resources=Resources(gpu=2, cpu=8000, memory=64 * GiB))],
            ),
            PodGroupCreated(
                name="nlp-notebook",
                queue="nlp",
                pods=[PodSpec(resources=Resources(gpu=0.5, cpu=2000, memory=GiB))],
            ),
            PodGroupCreated(
                name="nlp-huge",
                queue="nlp",
                pods=[PodSpec(resources=Resources(gpu=16, cpu=1000, memory=GiB))],
            ),
        ],
        [
            BindRequested(job="vision-train", pod=0, node="gpu-a", gpus=[0, 1], cycle=1),
            BindRequested(job="vision-train", pod=1, node="gpu-a", gpus=[2, 3], cycle=1),
            BindRequested(job="nlp-notebook", pod=0, node="gpu-b", gpus=[1], gpu_share=0.5, cycle=1),
            CycleCompleted(
                cycle=1, watermark=3, clock=1.0, binds=3, pending={"nlp-huge": "no node has 16 gpu"}
            ),
        ],
        [
            PodBound(job="vision-train", pod=0, node="gpu-a", gpus=[0, 1]),
            PodBound(job="vision-train", pod=1, node="gpu-a", gpus=[2, 3]),
            PodBound(job="nlp-notebook", pod=0, node="gpu-b", gpus=[1], gpu_share=0.5),
        ],
        [
            QueueStatus(name="research", fair_share={"gpu": 8.0}, allocated={"gpu": 4.5, "cpu": 18000.0}),
            QueueStatus(
                name="vision",
                fair_share={"gpu": 5.0, "cpu": 32000.0},
                allocated={"gpu": 4.0, "cpu": 16000.0, "memory": 128.0 * GiB},
                requested={"gpu": 4.0},
            ),
            QueueStatus(name="nlp", fair_share={"gpu": 3.0}, allocated={"gpu": 0.5}),
        ],
        [
            EvictionRequested(
                job="nlp-notebook", pod=0, node="gpu-b", cycle=2, action="reclaim", for_job="vision-train"
            ),
            CycleCompleted(cycle=2, watermark=6, clock=2.0, evictions=1),
        ],
    ]


@pytest.fixture
async def client(pg_pool):
    async for http in api_over(pg_pool, history()):
        yield http


async def test_queues_come_as_a_tree_with_every_resource_in_user_units(client):
    [research] = (await get(client, "/api/queues"))["queues"]
    assert research["name"] == "research"
    vision, nlp = research["children"]
    assert (vision["name"], nlp["name"]) == ("vision", "nlp")
    assert vision["resources"]["gpu"] == {
        "quota": 4.0,
        "limit": 6.0,
        "over_quota_weight": 1.0,
        "fair_share": 5.0,
        "allocated": 4.0,
        "requested": 4.0,
    }
    assert vision["resources"]["cpu"]["quota"] == 16.0 and vision["resources"]["cpu"]["allocated"] == 16.0
    assert nlp["resources"]["cpu"]["quota"] == -1.0


async def test_a_parent_queue_counts_the_jobs_of_its_whole_subtree(client):
    [research] = (await get(client, "/api/queues"))["queues"]
    assert research["jobs"] == {"pending": 1, "running": 2, "preempted": 0, "completed": 0, "failed": 0}
    assert research["children"][1]["jobs"]["pending"] == 1


async def test_jobs_of_a_parent_queue_include_its_leaves(client):
    found = await get(client, "/api/jobs?queue=research")
    assert {j["name"] for j in found["jobs"]} == {"vision-train", "nlp-notebook", "nlp-huge"}
    assert [j["name"] for j in (await get(client, "/api/jobs?queue=vision"))["jobs"]] == ["vision-train"]


async def test_jobs_filter_by_status_and_search_by_name(client):
    pending = await get(client, "/api/jobs?status=pending")
    assert [(j["name"], j["reason"]) for j in pending["jobs"]] == [("nlp-huge", "no node has 16 gpu")]
    assert [j["name"] for j in (await get(client, "/api/jobs?q=NOTE"))["jobs"]] == ["nlp-notebook"]
    assert (await get(client, "/api/jobs?q=%25"))["jobs"] == []


async def test_jobs_come_newest_first_with_how_many_match_beyond_the_limit(client):
    found = await get(client, "/api/jobs?limit=2")
    assert found["total"] == 3
    assert [j["name"] for j in found["jobs"]] == ["nlp-huge", "nlp-notebook"]


async def test_a_job_row_counts_its_running_pods_and_what_it_asks_for(client):
    [train] = (await get(client, "/api/jobs?queue=vision"))["jobs"]
    assert (train["status"], train["pods_running"], train["pods_total"]) == ("running", 2, 2)
    assert (train["gpu"], train["cpu"], train["memory"]) == (4.0, 16.0, 128.0 * GiB)
    assert train["reason"] is None


@pytest.mark.parametrize(
    ("query", "field"),
    [("limit=0", "query.limit"), ("limit=ten", "query.limit"), ("status=sleeping", "query.status")],
)
async def test_a_bad_jobs_parameter_is_refused_naming_it(client, query, field):
    body = await get(client, f"/api/jobs?{query}", status=400)
    assert body["field"] == field and body["error"]


async def test_an_unknown_queue_or_job_answers_404_naming_the_parameter(client):
    assert (await get(client, "/api/jobs?queue=nope", status=404))["field"] == "query.queue"
    assert (await get(client, "/api/jobs/nope", status=404))["field"] == "path.name"
    assert (await get(client, "/api/jobs/nope/why", status=404))["field"] == "path.name"


async def test_a_job_shows_its_pods_and_its_why_timeline(client):
    job = await get(client, "/api/jobs/nlp-notebook")
    assert [(p["idx"], p["status"], p["node"], p["gpus"], p["gpu_share"]) for p in job["pods"]] == [
        (0, "releasing", "gpu-b", [1], 0.5)
    ]
    assert [e["kind"] for e in job["timeline"]] == [
        "created",
        "bind_requested",
        "bound",
        "eviction_requested",
    ]
    assert "reclaim" in job["timeline"][-1]["text"] and job["timeline"][-1]["for_job"] == "vision-train"
    why = await get(client, "/api/jobs/nlp-notebook/why")
    assert why["timeline"] == job["timeline"]


async def test_the_why_of_the_job_that_reclaimed_shows_whom_it_displaced(client):
    kinds = [e["kind"] for e in (await get(client, "/api/jobs/vision-train/why"))["timeline"]]
    assert kinds == ["created", "bind_requested", "bound", "made_room"]


async def test_the_gpu_map_shows_whole_devices_and_the_fraction_of_a_shared_one(client):
    nodes = {n["name"]: n for n in (await get(client, "/api/nodes"))["nodes"]}
    a, b = nodes["gpu-a"], nodes["gpu-b"]
    assert [[(h["job"], h["pod"], h["share"]) for h in d["holders"]] for d in a["devices"]] == [
        [("vision-train", 0, 1.0)],
        [("vision-train", 0, 1.0)],
        [("vision-train", 1, 1.0)],
        [("vision-train", 1, 1.0)],
    ]
    assert [d["used"] for d in b["devices"]] == [0.0, 0.5]
    assert b["devices"][1]["holders"][0]["queue"] == "nlp"
    assert (a["used"]["gpu"], b["used"]["gpu"]) == (4.0, 0.5)
    assert (a["gpu_model"], a["gpu_memory"], a["total"]["cpu"]) == ("H100", 80 * GiB, 64.0)


async def test_the_gpu_map_can_be_limited_and_says_how_many_nodes_there_are(client):
    found = await get(client, "/api/nodes?limit=1")
    assert [n["name"] for n in found["nodes"]] == ["gpu-a"] and found["total"] == 2
    assert (await get(client, "/api/nodes?limit=0", status=400))["field"] == "query.limit"


async def test_recent_decisions_come_newest_first_with_a_gangs_binds_as_one_row(client):
    decisions = (await get(client, "/api/activity"))["decisions"]
    assert [(d["kind"], d["job"], d["pods"]) for d in decisions] == [
        ("evict", "nlp-notebook", 1),
        ("bind", "nlp-notebook", 1),
        ("bind", "vision-train", 2),
    ]
    evict = decisions[0]
    assert (evict["action"], evict["for_job"], evict["queue"], evict["nodes"]) == (
        "reclaim",
        "vision-train",
        "nlp",
        ["gpu-b"],
    )
    assert evict["at"] is not None


async def test_activity_after_a_sequence_returns_only_newer_decisions(client):
    newest = (await get(client, "/api/activity"))["decisions"][0]["seq"]
    assert (await get(client, f"/api/activity?after={newest}"))["decisions"] == []
    assert (await get(client, "/api/activity?after=-1", status=400))["field"] == "query.after"


async def test_the_overview_counts_jobs_capacity_and_the_last_cycle(client):
    ov = await get(client, "/api/overview")
    assert ov["jobs"] == {"pending": 1, "running": 2, "preempted": 0, "completed": 0, "failed": 0}
    assert (ov["nodes"], ov["queues"]) == (2, 3)
    assert ov["gpu"] == {"total": 6.0, "used": 4.5}
    assert (ov["last_cycle"]["cycle"], ov["last_cycle"]["evictions"]) == (2, 1)
    assert ov["last_seq"] == len(history())


async def test_the_page_and_its_assets_are_served_without_a_build_step(client):
    page = await client.get("/")
    assert page.status_code == 200 and 'src="/static/app.js"' in page.text
    for asset in ("/static/app.js", "/static/app.css"):
        assert (await client.get(asset)).status_code == 200
