"""The projector's sink against a real Postgres: redelivery changes nothing."""

from __future__ import annotations

import pytest
from muster.bus import Delivery
from muster.events import (
    BindFailed,
    BindRequested,
    EvictionRequested,
    NodeRegistered,
    NodeSpec,
    PodBound,
    PodCompleted,
    PodEvicted,
    PodFailed,
    PodGroupCreated,
    PodSpec,
    Resources,
    decode_envelope,
)
from muster.store.sink import PostgresSink

pytestmark = pytest.mark.postgres

# The node every history binds on: the projector refuses a bind on a node never registered.
NODE = NodeRegistered(node=NodeSpec(name="n", resources=Resources(gpu=8)))


def history() -> list[Delivery]:
    group = PodGroupCreated(name="train", queue="q", pods=[PodSpec(count=2, resources=Resources(gpu=1))])
    return [
        Delivery("muster.podgroups", 1, [NODE, group]),
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
        assert await conn.fetchval("SELECT count(*) FROM events") == 6


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
            Delivery("muster.podgroups", 1, [NODE, *(group(n) for n in names)]),
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


def failed(seq: int = 4) -> Delivery:
    """Pod 0 of `train` exits with code 3; pod 1 still runs."""
    return Delivery(
        "muster.pods.default",
        seq,
        [
            PodFailed(
                job="train", pod=0, node="n", exit_code=3, reason="exited with code 3: CUDA out of memory"
            )
        ],
    )


async def failure_rows(pool) -> list[tuple]:
    async with pool.acquire() as conn:
        return [
            tuple(r)
            for r in await conn.fetch(
                "SELECT idx, status, node, exit_code, failure_reason FROM pods WHERE job = 'train' ORDER BY idx"
            )
        ]


async def test_a_failed_pod_keeps_its_node_exit_code_and_reason(pg_pool):
    await PostgresSink(pg_pool).apply([*history(), failed()])
    assert await failure_rows(pg_pool) == [
        (0, "failed", "n", 3, "exited with code 3: CUDA out of memory"),
        (1, "bound", "n", None, None),
    ]


async def test_a_job_whose_pod_failed_is_running_while_another_of_its_pods_runs(pg_pool):
    await PostgresSink(pg_pool).apply([*history(), failed()])
    assert await pod_and_job_statuses(pg_pool) == (["failed", "bound"], "running")


async def test_a_job_fails_once_its_last_pod_ends_if_one_of_them_failed(pg_pool):
    sink = PostgresSink(pg_pool)
    await sink.apply([*history(), failed()])
    await sink.apply([Delivery("muster.pods.default", 5, [PodCompleted(job="train", pod=1, node="n")])])
    assert await pod_and_job_statuses(pg_pool) == (["failed", "completed"], "failed")


async def test_a_job_whose_pod_failed_waits_rather_than_fails_while_another_pod_is_to_run(pg_pool):
    evicted = Delivery("muster.pods.default", 5, [PodEvicted(job="train", pod=1, node="n")])
    await PostgresSink(pg_pool).apply([*history(), failed(), evicted])
    assert await pod_and_job_statuses(pg_pool) == (["failed", "pending"], "preempted")


async def test_a_pod_that_fails_before_it_ever_ran_fails_its_job(pg_pool):
    group = PodGroupCreated(name="train", queue="q", pods=[PodSpec(resources=Resources(gpu=1))])
    await PostgresSink(pg_pool).apply(
        [
            Delivery("muster.podgroups", 1, [NODE, group]),
            Delivery("muster.decisions.default", 2, [BindRequested(job="train", pod=0, node="n", gpus=[0])]),
            Delivery(
                "muster.pods.default", 3, [PodFailed(job="train", pod=0, node="n", reason="no command")]
            ),
        ]
    )
    assert await pod_and_job_statuses(pg_pool) == (["failed"], "failed")
    assert await failure_rows(pg_pool) == [(0, "failed", "n", None, "no command")]


def after_failure(first_seq: int) -> list[Delivery]:
    """What the log may still say of a pod that failed: an eviction decided before the allocator read
    the failure, the binder's refusal of a move's bind, a late confirmation and a late completion."""
    return [
        *after_completion(first_seq),
        Delivery(
            "muster.pods.default",
            first_seq + 2,
            [
                PodEvicted(job="train", pod=0, node="n"),
                PodBound(job="train", pod=0, node="m", gpus=[0]),
                PodCompleted(job="train", pod=0, node="m"),
                PodFailed(job="train", pod=0, node="m", exit_code=1, reason="a second answer"),
            ],
        ),
    ]


async def test_a_failed_pod_stays_failed_whatever_later_messages_say_of_it(pg_pool):
    sink = PostgresSink(pg_pool)
    await sink.apply([*history(), failed()])
    await sink.apply(after_failure(5))
    (pod0, _) = await failure_rows(pg_pool)
    assert pod0 == (0, "failed", "n", 3, "exited with code 3: CUDA out of memory")


async def test_a_failed_pod_stays_failed_when_later_messages_come_in_the_same_batch(pg_pool):
    await PostgresSink(pg_pool).apply([*history(), failed(), *after_failure(5)])
    (pod0, _) = await failure_rows(pg_pool)
    assert pod0 == (0, "failed", "n", 3, "exited with code 3: CUDA out of memory")
