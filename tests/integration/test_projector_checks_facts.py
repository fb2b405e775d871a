"""The projector checks a node's word about a pod against its projection, as every fold does: a forged
fact is kept in ``events``, moves no row, and is dead-lettered once with the reason."""

from __future__ import annotations

import pytest
from muster import events as ev
from muster.bus import Delivery
from muster.store.sink import PostgresSink

from services.projector.pipeline import Pipeline

pytestmark = pytest.mark.postgres

NODES = [ev.NodeRegistered(node=ev.NodeSpec(name=name, resources=ev.Resources(gpu=2))) for name in ("a", "b")]
JOB = ev.PodGroupCreated(name="train", queue="q", pods=[ev.PodSpec(count=1, resources=ev.Resources(gpu=1))])


def running_on_a() -> list[Delivery]:
    return [
        Delivery("t.podgroups", 1, [*NODES, JOB]),
        Delivery("t.decisions.default", 2, [ev.BindRequested(job="train", pod=0, node="a", gpus=[0])]),
        Delivery("t.pods.default.a", 3, [ev.PodBound(job="train", pod=0, node="a", gpus=[0])]),
    ]


FORGED = Delivery("t.pods.default.b", 4, [ev.PodCompleted(job="train", pod=0, node="b")])


async def pod_row(pool) -> tuple:
    async with pool.acquire() as conn:
        pod = await conn.fetchrow("SELECT status, node FROM pods WHERE job = 'train'")
        job = await conn.fetchval("SELECT status FROM jobs WHERE name = 'train'")
        kept = await conn.fetchval("SELECT count(*) FROM events WHERE stream_seq = 4")
    return tuple(pod), job, kept


async def project(pool, deliveries: list[Delivery], letters: list) -> None:
    sink = PostgresSink(pool)

    async def letter(delivery: Delivery, why: str) -> None:
        letters.append((delivery.seq, why))

    facts = await sink.facts()  # as the projector starts: the placements its rows show
    pipeline = Pipeline(facts.seq, sink.commit, facts, letter)
    await pipeline.handle(deliveries)
    await pipeline.drain()


async def test_another_nodes_word_that_a_running_pod_completed_is_lettered_and_projected_nowhere(pg_pool):
    letters: list = []
    await project(pg_pool, [*running_on_a(), FORGED], letters)
    assert letters == [(4, "pod train/0 was placed on node a, not b")]
    assert await pod_row(pg_pool) == (("bound", "a"), "running", 1)


async def test_a_projector_restarted_from_its_rows_refuses_the_same_word(pg_pool):
    letters: list = []
    await project(pg_pool, running_on_a(), letters)
    await project(pg_pool, [FORGED], letters)  # a new process: the placements are read from the rows
    assert letters == [(4, "pod train/0 was placed on node a, not b")]
    assert await pod_row(pg_pool) == (("bound", "a"), "running", 1)


async def test_the_node_a_pod_moves_from_may_say_it_let_go_and_the_pod_is_then_its_new_nodes(pg_pool):
    letters: list = []
    move = [
        ev.EvictionRequested(job="train", pod=0, node="a"),
        ev.BindRequested(job="train", pod=0, node="b", gpus=[1]),
    ]
    await project(
        pg_pool,
        [
            *running_on_a(),
            Delivery("t.decisions.default", 4, move),
            Delivery("t.pods.default.a", 5, [ev.PodEvicted(job="train", pod=0, node="a")]),
            Delivery("t.pods.default.b", 6, [ev.PodBound(job="train", pod=0, node="b", gpus=[1])]),
            Delivery("t.pods.default.b", 7, [ev.PodCompleted(job="train", pod=0, node="b")]),
        ],
        letters,
    )
    assert letters == []
    async with pg_pool.acquire() as conn:
        assert await conn.fetchval("SELECT status FROM jobs WHERE name = 'train'") == "completed"
