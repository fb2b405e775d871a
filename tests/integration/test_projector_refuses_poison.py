"""The projector against real NATS and Postgres: what readers refuse is dead-lettered, never projected.

Each poison message stands between good ones; the projection keeps every good
one, reaches the end of the stream, and letters each poison once, across restarts.
"""

from __future__ import annotations

import asyncio

import pytest
from muster.events import (
    BindRequested,
    NodeRegistered,
    NodeSpec,
    PodBound,
    PodGroupCreated,
    QueueSpec,
    QueueUpserted,
    Resources,
    WorkloadSubmitted,
)
from muster.runtime.settings import Settings
from muster.service import ServiceContext

from services.projector.app import run
from tests.poison import deep_envelope, raw_envelope

pytestmark = [pytest.mark.nats, pytest.mark.postgres]

PROJECTION = ("events", "checkpoints", "workloads", "queues", "nodes", "jobs", "pods", "decisions", "cycles",
              "dead_letters")  # fmt: skip
FORGED = [
    BindRequested(job="forged", pod=0, node="forged-node", gpus=[0], epoch=1),
    PodBound(job="forged", pod=0, node="forged-node"),
    QueueUpserted(queue=QueueSpec(name="forged-queue")),
    NodeRegistered(node=NodeSpec(name="forged-node", resources=Resources(gpu=1000))),
]


async def project_to_the_end(nats_bus, endpoints, tmp_path) -> None:
    """Run the projector until its checkpoint reaches the stream's end, then stop it."""
    ctx = ServiceContext(
        name="projector", settings=Settings(home=tmp_path), endpoints=endpoints, bus=nats_bus
    )
    task = asyncio.create_task(run(ctx))
    end = await nats_bus.last_seq()
    try:
        while await checkpoint(endpoints) < end:
            assert not task.done(), task
            await asyncio.sleep(0.05)
    finally:
        ctx.stop.set()
        await asyncio.wait_for(task, 30)


async def checkpoint(endpoints) -> int:
    from muster.store import connect

    conn = await connect(endpoints.pg_dsn, endpoints.prefix)
    try:
        return await conn.fetchval("SELECT stream_seq FROM checkpoints WHERE consumer = 'projector'") or 0
    finally:
        await conn.close()


async def rows(pg_pool, sql: str) -> list[tuple]:
    async with pg_pool.acquire() as conn:
        return [tuple(r) for r in await conn.fetch(sql)]


async def test_poison_between_good_messages_is_lettered_once_and_the_rest_projected(
    nats_bus, pg_pool, endpoints, tmp_path
):
    s = nats_bus.subjects
    poison: dict[int, str] = {}
    await nats_bus.publish(s.workloads, [WorkloadSubmitted(uid="good/1", manifests=[])], msg_id="w1")
    for i, forged in enumerate(FORGED):
        # The framework login may publish submissions only: a forged fact rides on its subject.
        seq = await nats_bus.publish(s.workloads, [forged], msg_id=f"forged-{i}")
        poison[seq] = f"may not travel on {s.workloads}"
    seq = await nats_bus.publish_raw(
        s.podgroups,
        raw_envelope({"type": "PodGroupCreated", "name": "huge", "queue": "q", "priority": 3_000_000_000}),
        msg_id="priority",
    )
    poison[seq] = "$.events[0].priority: 3000000000 is above the limit"
    seq = await nats_bus.publish_raw(s.queue_status, deep_envelope(5000), msg_id="deep")
    poison[seq] = "nested deeper than the decoder can follow"
    await nats_bus.publish(s.podgroups, [PodGroupCreated(name="after", queue="q")], msg_id="after")
    node = NodeSpec(name="real-node", resources=Resources(gpu=8))
    await nats_bus.publish(s.nodes("default"), [NodeRegistered(node=node)], msg_id="node")

    await project_to_the_end(nats_bus, endpoints, tmp_path)
    # Postgres loses its data: the projector reads the log again from the start, poison and letters.
    async with pg_pool.acquire() as conn:
        await conn.execute(f"TRUNCATE {', '.join(PROJECTION)}")
    await project_to_the_end(nats_bus, endpoints, tmp_path)

    assert await rows(pg_pool, "SELECT name FROM jobs") == [("after",)]
    assert await rows(pg_pool, "SELECT name FROM nodes") == [("real-node",)]
    assert await rows(pg_pool, "SELECT name FROM queues") == []
    assert await rows(pg_pool, "SELECT uid FROM workloads") == [("good/1",)]
    assert not await rows(
        pg_pool, f"SELECT 1 FROM events WHERE stream_seq IN ({', '.join(map(str, poison))})"
    )
    letters = await rows(
        pg_pool, "SELECT original_seq, error FROM dead_letters WHERE service = 'projector' ORDER BY 1"
    )
    assert [seq for seq, _ in letters] == sorted(poison)
    for seq, error in letters:
        assert poison[seq] in error, (seq, error)
