"""The queue-controller on a real bus: what it creates on a system's first start, and what it leaves alone."""

from __future__ import annotations

import asyncio

import pytest
from muster.events import QueueSpec, QueueUpserted
from muster.runtime.settings import Settings
from muster.sdk import Client
from muster.service import run_service

from services.queue_controller.app import run as queue_controller

pytestmark = [pytest.mark.nats]


async def upserted(client: Client) -> list[str]:
    """Every queue the log says was created or updated, in order."""
    names = []
    async for delivery in client.bus.read([client.subjects.queues]):
        names += [e.queue.name for e in delivery.events if isinstance(e, QueueUpserted)]
    return names


async def after_controller_answers(endpoints, tmp_path, client: Client) -> list[str]:
    """Run the controller until it answers a request, then the queues the log holds.

    It settles the fallback queue before it reads requests, so once a request is
    answered, whatever it was going to create at start is in the log."""
    settings = Settings(
        home=tmp_path, nats_url=endpoints.nats_url, pg_dsn=endpoints.pg_dsn, prefix=endpoints.prefix
    )
    stop = asyncio.Event()
    service = asyncio.create_task(
        run_service("queue-controller", queue_controller, endpoints, settings, stop)
    )
    try:
        answers = await client.apply_queues([QueueSpec(name="team")])
        assert isinstance(answers["team"], QueueUpserted)
        return await upserted(client)
    finally:
        stop.set()
        await service


@pytest.fixture
async def client(endpoints):
    client = await Client.connect(endpoints)
    yield client
    try:
        await client.bus.js.delete_stream(endpoints.subjects.stream)
    finally:
        await client.close()


async def test_a_fresh_system_gets_the_podgroupers_fallback_queue_default_queue(endpoints, tmp_path, client):
    assert await after_controller_answers(endpoints, tmp_path, client) == ["default-queue", "team"]


async def test_a_system_that_already_has_queues_gets_no_new_one(endpoints, tmp_path, client):
    # A log recorded before the fallback was renamed: its `default` queue stays as it was.
    await client.bus.publish(
        client.subjects.queues, [QueueUpserted(queue=QueueSpec(name="default"))], msg_id="old-default"
    )
    assert await after_controller_answers(endpoints, tmp_path, client) == ["default", "team"]
