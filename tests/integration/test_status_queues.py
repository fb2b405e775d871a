"""`muster status`'s queues from the projection: parent, quota and limit, shown in tree order."""

from __future__ import annotations

import io

import pytest
from muster.bus import Delivery
from muster.cli.status_cmd import render
from muster.events import QueueResource, QueueSpec, QueueUpserted
from muster.store.queries import status
from muster.store.sink import PostgresSink
from rich.console import Console

pytestmark = pytest.mark.postgres

# Listed children first, as a queue file may list them once their parents exist.
QUEUES = [
    QueueSpec(
        name="root", resources={"gpu": QueueResource(quota=16, limit=24), "cpu": QueueResource(quota=64000)}
    ),
    QueueSpec(name="nlp", parent="research", resources={"gpu": QueueResource(quota=4)}),
    QueueSpec(name="research", parent="root", resources={"gpu": QueueResource(quota=8, limit=12)}),
    QueueSpec(name="adhoc"),
]


async def projected_status(pool) -> dict:
    messages = [[QueueUpserted(queue=q)] for q in QUEUES]
    await PostgresSink(pool).apply([Delivery("t.events", i + 1, events) for i, events in enumerate(messages)])
    async with pool.acquire() as conn:
        return await status(conn)


async def test_each_queue_has_its_quota_and_limit_per_resource_none_where_unset(pg_pool):
    queues = (await projected_status(pg_pool))["queues"]
    assert queues["root"]["quota"] == {"cpu": 64.0, "gpu": 16.0}
    assert queues["root"]["limit"] == {"cpu": None, "gpu": 24.0}
    assert (queues["nlp"]["quota"], queues["nlp"]["limit"]) == ({"gpu": 4.0}, {"gpu": None})
    # A queue naming no gpu gets none: quota 0, as the allocator reads it, and no limit.
    assert (queues["adhoc"]["quota"], queues["adhoc"]["limit"]) == ({"gpu": 0.0}, {"gpu": None})


async def test_the_json_keeps_its_meaning_and_only_adds_quota_and_limit(pg_pool):
    queue = (await projected_status(pg_pool))["queues"]["research"]
    assert set(queue) == {"parent", "fair_share", "allocated", "quota", "limit"}
    assert queue["parent"] == "root"


async def test_status_shows_the_projected_queues_in_tree_order(pg_pool):
    state = await projected_status(pg_pool)
    console = Console(width=100, record=True, color_system=None, file=io.StringIO())
    console.print(render(state))
    rows = [
        line.split("│")[1].rstrip() for line in console.export_text().splitlines() if line.startswith("│")
    ]
    assert rows[:4] == ["adhoc", "root", "  research", "    nlp"]
