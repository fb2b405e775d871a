"""The dashboard's history of queue allocations, and the jobs of queues that do not exist."""

from __future__ import annotations

import pytest
from muster.events import (
    NodeRegistered,
    NodeSpec,
    PodGroupCreated,
    PodSpec,
    QueueSpec,
    QueueStatus,
    QueueUpserted,
    Resources,
)

from tests.dashboard.api_client import api_over, get

pytestmark = pytest.mark.postgres


def history() -> list[list]:
    """Two teams, eight GPUs; team-a's allocation moves from 2 to 6 GPUs; a job names a queue never made."""
    return [
        [QueueUpserted(queue=QueueSpec(name="team-a")), QueueUpserted(queue=QueueSpec(name="team-b"))],
        [NodeRegistered(node=NodeSpec(name="gpu-a", resources=Resources(gpu=8, cpu=64000)))],
        [
            QueueStatus(name="team-a", fair_share={"gpu": 4.0}, allocated={"gpu": 2.0}),
            QueueStatus(name="team-b", fair_share={"gpu": 4.0}, allocated={"gpu": 1.0}),
        ],
        [QueueStatus(name="team-a", fair_share={"gpu": 7.0}, allocated={"gpu": 6.0})],
        [PodGroupCreated(name="lost-job", queue="no-such-queue", pods=[PodSpec(resources=Resources(gpu=1))])],
    ]


@pytest.fixture
async def client(pg_pool):
    async for http in api_over(pg_pool, history()):
        # As if the first statuses were said 150 minutes ago and the second 30 minutes ago.
        await pg_pool.execute(
            "UPDATE events SET recorded_at = now() - make_interval(mins => $1) WHERE stream_seq = $2",
            150,
            3,
        )
        await pg_pool.execute(
            "UPDATE events SET recorded_at = now() - make_interval(mins => $1) WHERE stream_seq = $2",
            30,
            4,
        )
        yield http


async def test_history_shows_each_queue_as_it_stood_at_each_step(client):
    got = await get(client, "/api/history?hours=3")
    team_a = got["queues"]["team-a"]
    points = len(got["used"])
    at = lambda minutes_ago: points - 1 - int(minutes_ago * 60 / got["step"])  # noqa: E731
    assert team_a["allocated"][at(170)] == 0.0, "nothing said yet 170 minutes ago"
    assert team_a["allocated"][at(100)] == 2.0 and team_a["fair_share"][at(100)] == 4.0
    assert team_a["allocated"][-1] == 6.0 and team_a["fair_share"][-1] == 7.0
    assert got["queues"]["team-b"]["allocated"][-1] == 1.0, "a quiet queue keeps its last word"


async def test_history_sums_top_level_queues_against_the_registered_gpus(client):
    got = await get(client, "/api/history?hours=3")
    assert got["gpu_total"] == 8.0
    assert got["used"][-1] == 7.0 and max(got["used"][:10]) == 0.0


async def test_a_window_that_opens_after_a_status_starts_from_it(client):
    got = await get(client, "/api/history?hours=1")
    assert got["queues"]["team-a"]["allocated"][0] == 2.0
    assert got["queues"]["team-a"]["allocated"][-1] == 6.0


@pytest.mark.parametrize("hours", ["0", "49", "nan", "three"])
async def test_a_bad_history_window_is_refused_naming_it(client, hours):
    got = await get(client, f"/api/history?hours={hours}", status=400)
    assert got["field"] == "query.hours"


async def test_jobs_of_a_queue_that_does_not_exist_are_shown_under_it_marked_missing(client):
    queues = (await get(client, "/api/queues"))["queues"]
    assert [(q["name"], q["missing"]) for q in queues] == [
        ("team-a", False),
        ("team-b", False),
        ("no-such-queue", True),
    ]
    assert queues[-1]["jobs"]["pending"] == 1
    jobs = await get(client, "/api/jobs?queue=no-such-queue")
    assert [j["name"] for j in jobs["jobs"]] == ["lost-job"]
