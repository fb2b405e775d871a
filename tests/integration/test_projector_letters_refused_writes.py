"""The projector against real NATS and Postgres: a message Postgres refuses for good is dead-lettered
with the refusal, and the projection goes on with the next one.

Bounds at admission keep out what they know of; what they do not (here a constraint
the database has and the bus does not know) must not stop the projection for good.
"""

from __future__ import annotations

import asyncio

import pytest
from muster.events import PodGroupCreated
from muster.runtime.settings import Settings
from muster.service import ServiceContext

from services.projector.app import run
from tests.polling import wait_until

pytestmark = [pytest.mark.nats, pytest.mark.postgres]


async def rows(pg_pool, sql: str) -> list[tuple]:
    async with pg_pool.acquire() as conn:
        return [tuple(r) for r in await conn.fetch(sql)]


async def test_a_message_postgres_refuses_every_time_is_lettered_and_the_next_one_projected(
    nats_bus, pg_pool, endpoints, tmp_path
):
    # Postgres refuses this job's row, whenever and however often it is written.
    async with pg_pool.acquire() as conn:
        await conn.execute("ALTER TABLE jobs ADD CONSTRAINT no_refused_jobs CHECK (name <> 'refused')")
    s = nats_bus.subjects
    await nats_bus.publish(s.podgroups, [PodGroupCreated(name="before", queue="q")], msg_id="before")
    refused = await nats_bus.publish(
        s.podgroups, [PodGroupCreated(name="refused", queue="q")], msg_id="refused"
    )
    after = await nats_bus.publish(s.podgroups, [PodGroupCreated(name="after", queue="q")], msg_id="after")

    ctx = ServiceContext(
        name="projector", settings=Settings(home=tmp_path), endpoints=endpoints, bus=nats_bus
    )
    projector = asyncio.create_task(run(ctx))
    try:
        letters = await wait_until(
            lambda: rows(pg_pool, "SELECT original_seq, error FROM dead_letters WHERE service = 'projector'"),
            what="the projector's dead letter",
        )
        await wait_until(
            lambda: rows(pg_pool, f"SELECT 1 FROM events WHERE stream_seq = {after}"), what="after"
        )
    finally:
        ctx.stop.set()
        await asyncio.wait_for(projector, 30)

    assert [seq for seq, _ in letters] == [refused]
    assert "23514" in letters[0][1] and "no_refused_jobs" in letters[0][1]
    assert await rows(pg_pool, "SELECT name FROM jobs ORDER BY name") == [("after",), ("before",)]
    assert not await rows(pg_pool, f"SELECT 1 FROM events WHERE stream_seq = {refused}")
