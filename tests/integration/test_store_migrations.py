"""Migrations that change what existing rows hold, applied to a projection written before them."""

from __future__ import annotations

import asyncpg
import msgspec
import pytest
from muster.events import PodFailed
from muster.store import migrate as migrations
from muster.store import schema_for

pytestmark = pytest.mark.postgres


@pytest.fixture
async def conn(endpoints):
    schema = schema_for(endpoints.prefix)
    conn = await asyncpg.connect(endpoints.pg_dsn)
    try:
        yield conn
    finally:
        await conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
        await conn.close()


async def migrate_up_to(conn, schema: str, version: int, monkeypatch) -> None:
    older = [m for m in migrations.migrations() if m[0] <= version]
    with monkeypatch.context() as patch:
        patch.setattr(migrations, "migrations", lambda: older)
        await migrations.migrate(conn, schema)


async def test_pods_failed_before_003_get_how_they_ended_from_the_first_pod_failed_in_the_log(
    conn, endpoints, monkeypatch
):
    schema = schema_for(endpoints.prefix)
    await migrate_up_to(conn, schema, 2, monkeypatch)
    await conn.execute(f'SET search_path TO "{schema}"')
    await conn.executemany(
        "INSERT INTO pods (job, idx, status, node, gpu, cpu, memory, updated_seq) VALUES ($1, $2, $3, 'n', 1, 0, 0, 1)",
        [("crashed", 0, "failed"), ("done", 0, "completed")],
    )
    log = [
        (5, PodFailed(job="crashed", pod=0, node="n", exit_code=3, reason="out of memory")),
        (7, PodFailed(job="done", pod=0, node="n", exit_code=2, reason="after it completed")),
        (9, PodFailed(job="crashed", pod=0, node="n", exit_code=1, reason="a second answer")),
    ]
    await conn.executemany(
        "INSERT INTO events (stream_seq, idx, subject, type, payload) VALUES ($1, 0, 'p', 'PodFailed', $2::json)",
        [(seq, msgspec.json.encode(event).decode()) for seq, event in log],
    )

    applied = await migrations.migrate(conn, schema)
    assert applied[0] == "003_pod_failures.sql"
    rows = await conn.fetch("SELECT job, exit_code, failure_reason FROM pods ORDER BY job")
    assert [tuple(r) for r in rows] == [("crashed", 3, "out of memory"), ("done", None, None)]
