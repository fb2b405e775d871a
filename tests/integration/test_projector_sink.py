"""The projector's sink against a real Postgres: redelivery changes nothing."""

from __future__ import annotations

import pytest
from muster.bus import Delivery
from muster.events import BindRequested, PodBound, PodCompleted, PodGroupCreated, PodSpec, Resources

from services.projector.sink import PostgresSink

pytestmark = pytest.mark.postgres


def history() -> list[Delivery]:
    group = PodGroupCreated(name="train", queue="q", pods=[PodSpec(count=2, resources=Resources(gpu=1))])
    return [
        Delivery("muster.podgroups", 1, [group]),
        Delivery(
            "muster.decisions.default",
            2,
            [BindRequested(job="train", pod=i, node="n", gpus=[i]) for i in range(2)],
        ),
        Delivery(
            "muster.pods.default", 3, [PodBound(job="train", pod=i, node="n", gpus=[i]) for i in range(2)]
        ),
    ]


async def snapshot(pool) -> dict:
    async with pool.acquire() as conn:
        return {
            table: [tuple(r) for r in await conn.fetch(f"SELECT * FROM {table} ORDER BY 1, 2")]
            for table in ("jobs", "pods", "decisions", "checkpoints")
        } | {"events": [tuple(r)[:5] for r in await conn.fetch("SELECT * FROM events ORDER BY 1, 2")]}


async def test_a_batch_is_projected_with_the_job_status_derived_from_its_pods(pg_pool):
    await PostgresSink(pg_pool).apply(history())
    async with pg_pool.acquire() as conn:
        assert await conn.fetchval("SELECT status FROM jobs WHERE name = 'train'") == "running"
        assert await conn.fetchval("SELECT count(*) FROM events") == 5


async def test_redelivered_messages_change_nothing(pg_pool):
    sink = PostgresSink(pg_pool)
    assert await sink.apply(history()) == 3
    once = await snapshot(pg_pool)
    assert await sink.apply(history()) == 0
    assert await sink.apply(history()[1:]) == 0
    assert await snapshot(pg_pool) == once


async def test_a_partly_redelivered_batch_applies_only_what_is_new(pg_pool):
    sink = PostgresSink(pg_pool)
    await sink.apply(history()[:2])
    done = [
        Delivery("muster.pods.default", 4, [PodCompleted(job="train", pod=i, node="n") for i in range(2)])
    ]
    assert await sink.apply(history()[1:] + done) == 2
    async with pg_pool.acquire() as conn:
        assert await conn.fetchval("SELECT status FROM jobs WHERE name = 'train'") == "completed"
        assert await conn.fetchval("SELECT stream_seq FROM checkpoints") == 4
