"""Fixtures shared by every test: real servers (embedded unless configured), isolated names."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import asyncpg
import pytest
from muster.runtime.embedded import embedded_servers
from muster.runtime.settings import Endpoints
from muster.store import schema_for

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"


WARM_SCENARIOS = sorted((REPO / "tests" / "scenarios").glob("*.yaml"))


@pytest.fixture(scope="session")
def servers(tmp_path_factory) -> Endpoints:
    """A NATS JetStream and a Postgres server: the configured ones, else embedded for this session.

    Also compiles the allocator's kernels first (cached on disk: cheap once done), so an
    allocator process a test starts decides at once instead of compiling for its first minute.
    """
    from muster.warmup import warm

    warm(WARM_SCENARIOS)
    nats_url, pg_dsn = os.environ.get("MUSTER_NATS_URL"), os.environ.get("MUSTER_PG_DSN")
    if nats_url and pg_dsn:
        yield Endpoints(nats_url=nats_url, pg_dsn=pg_dsn)
        return
    home = tmp_path_factory.mktemp("muster-home")
    with embedded_servers(home, nats=not nats_url, postgres=not pg_dsn) as (n, p):
        yield Endpoints(nats_url=nats_url or n, pg_dsn=pg_dsn or p)


@pytest.fixture
def prefix() -> str:
    """A subject prefix (and so a stream and a schema) of this test's own."""
    return f"t{uuid.uuid4().hex[:12]}"


@pytest.fixture
def endpoints(servers: Endpoints, prefix: str) -> Endpoints:
    return Endpoints(nats_url=servers.nats_url, pg_dsn=servers.pg_dsn, prefix=prefix)


@pytest.fixture
async def nats_bus(endpoints: Endpoints):
    from muster.bus import NatsBus

    bus = await NatsBus.connect(endpoints.nats_url, endpoints.subjects, service="test")
    yield bus
    try:
        await bus.js.delete_stream(endpoints.subjects.stream)
    finally:
        await bus.close()


@pytest.fixture
async def pg_pool(endpoints: Endpoints):
    from muster.store import create_pool

    pool = await create_pool(endpoints.pg_dsn, endpoints.prefix, min_size=1, max_size=4)
    yield pool
    await pool.close()
    await drop_schema(endpoints)


async def drop_schema(endpoints: Endpoints) -> None:
    """Remove the Postgres schema of ``endpoints``' prefix: nothing of a test's system outlives it."""
    conn = await asyncpg.connect(endpoints.pg_dsn)
    try:
        await conn.execute(f'DROP SCHEMA IF EXISTS "{schema_for(endpoints.prefix)}" CASCADE')
    finally:
        await conn.close()
