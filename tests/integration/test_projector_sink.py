"""The projector's sink against a real Postgres: redelivery changes nothing."""

from __future__ import annotations

import pytest
from muster.bus import Delivery
from muster.events import (
    BindFailed,
    BindRequested,
    EvictionRequested,
    PodBound,
    PodCompleted,
    PodEvicted,
    PodGroupCreated,
    PodSpec,
    Resources,
    decode_envelope,
)

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


async def test_each_event_is_kept_as_the_json_it_travelled_as(pg_pool):
    # Written by hand: keys in another order and spacing than muster's own encoder would produce.
    data = (
        b'{"events": [{"queue": "q", "name": "verbatim", "type": "PodGroupCreated"},'
        b' {"type": "PodGroupCreated", "queue": "q", "name": "second"}]}'
    )
    deliveries = [Delivery("muster.podgroups", 1, decode_envelope(data), data=data)]
    await PostgresSink(pg_pool).apply(deliveries)
    async with pg_pool.acquire() as conn:
        payloads = [r[0] for r in await conn.fetch("SELECT payload::text FROM events ORDER BY idx")]
        spec = await conn.fetchval("SELECT spec::text FROM jobs WHERE name = 'verbatim'")
    assert payloads == [
        '{"queue": "q", "name": "verbatim", "type": "PodGroupCreated"}',
        '{"type": "PodGroupCreated", "queue": "q", "name": "second"}',
    ]
    assert spec == payloads[0]


async def test_jobs_changed_in_one_batch_each_get_the_status_their_own_pods_give(pg_pool):
    def group(name: str) -> PodGroupCreated:
        return PodGroupCreated(name=name, queue="q", pods=[PodSpec(count=1, resources=Resources(gpu=1))])

    names = ("runs", "evicted", "done", "never")
    await PostgresSink(pg_pool).apply(
        [
            Delivery("muster.podgroups", 1, [group(n) for n in names]),
            Delivery(
                "muster.pods.default",
                2,
                [
                    *(PodBound(job=n, pod=0, node="n", gpus=[0]) for n in ("runs", "evicted", "done")),
                    PodEvicted(job="evicted", pod=0, node="n"),
                    PodCompleted(job="done", pod=0, node="n"),
                ],
            ),
        ]
    )
    async with pg_pool.acquire() as conn:
        rows = {r["name"]: (r["status"], r["ever_ran"]) for r in await conn.fetch("SELECT * FROM jobs")}
    assert rows == {
        "runs": ("running", True),
        "evicted": ("preempted", True),
        "done": ("completed", True),
        "never": ("pending", False),
    }


def after_completion(first_seq: int) -> list[Delivery]:
    """What the log may still say of pods that completed: an eviction the allocator decided before it
    read the completion, and the binder's refusal of a move's bind for a finished pod."""
    return [
        Delivery(
            "muster.decisions.default",
            first_seq,
            [EvictionRequested(job="train", pod=i, node="n", action="reclaim") for i in range(2)]
            + [BindRequested(job="train", pod=0, node="m", gpus=[0], pipelined=True)],
        ),
        Delivery(
            "muster.pods.default",
            first_seq + 1,
            [BindFailed(job="train", pod=0, node="m", reason="finished")],
        ),
    ]


def completed() -> Delivery:
    return Delivery("muster.pods.default", 4, [PodCompleted(job="train", pod=i, node="n") for i in range(2)])


async def pod_and_job_statuses(pool) -> tuple[list[str], str]:
    async with pool.acquire() as conn:
        pods = [
            r["status"] for r in await conn.fetch("SELECT status FROM pods WHERE job = 'train' ORDER BY idx")
        ]
        return pods, await conn.fetchval("SELECT status FROM jobs WHERE name = 'train'")


async def test_a_completed_pod_stays_completed_whatever_later_messages_say_of_it(pg_pool):
    sink = PostgresSink(pg_pool)
    await sink.apply([*history(), completed()])
    await sink.apply(after_completion(5))
    assert await pod_and_job_statuses(pg_pool) == (["completed", "completed"], "completed")


async def test_a_completed_pod_stays_completed_when_later_messages_come_in_the_same_batch(pg_pool):
    await PostgresSink(pg_pool).apply([*history(), completed(), *after_completion(5)])
    assert await pod_and_job_statuses(pg_pool) == (["completed", "completed"], "completed")
