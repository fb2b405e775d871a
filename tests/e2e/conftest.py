"""A whole live system per test: real NATS, real Postgres, every service as a process."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from muster.runtime.settings import Endpoints, Settings
from muster.runtime.system import SERVICES, running_system

SCENARIOS = Path(__file__).parent / "scenarios"
# Fast cycles for short tests; the dashboard on a free port so a running `muster up` cannot collide.
SERVICE_ENV = {"MUSTER_CYCLE_INTERVAL": "0.02", "MUSTER_DASHBOARD_PORT": "0"}


@pytest.fixture
def live(tmp_path: Path, servers: Endpoints, prefix: str):
    """Every service running against this test's own stream and schema; yields the System."""
    settings = Settings(
        home=tmp_path / "home", nats_url=servers.nats_url, pg_dsn=servers.pg_dsn, prefix=prefix
    )
    with running_system(settings, services=SERVICES, service_env=SERVICE_ENV) as system:
        yield system


def muster(system, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    """Run the real CLI against a running system, as a user would."""
    env = dict(os.environ)
    for key in ("MUSTER_NATS_URL", "MUSTER_PG_DSN", "MUSTER_PREFIX"):
        env.pop(key, None)
    env["MUSTER_HOME"] = str(system.settings.home)
    result = subprocess.run(
        [sys.executable, "-m", "muster.cli.main", *args], env=env, capture_output=True, text=True, timeout=120
    )
    if check and result.returncode != 0:
        raise AssertionError(
            f"muster {' '.join(args)} exited {result.returncode}:\n{result.stdout}\n{result.stderr}"
        )
    return result


def status(system) -> dict:
    return json.loads(muster(system, "status", "--json").stdout)


def run(coro):
    return asyncio.run(coro)


async def log_of(system):
    """The whole log of a running system, as replay reads it."""
    from muster.bus import NatsBus
    from muster.replay import log_from_nats

    bus = await NatsBus.connect(system.endpoints.nats_url, system.endpoints.subjects, service="test")
    try:
        return await log_from_nats(bus)
    finally:
        await bus.close()


async def events_on(system, subject: str) -> list:
    """Every event on ``subject`` so far, read as the CLI login (which a secured system requires)."""
    from muster.bus import NatsBus

    endpoints = system.endpoints
    credentials = system.logins.nats.get("cli")  # none when the servers were given, unsecured
    bus = await NatsBus.connect(
        endpoints.nats_url, endpoints.subjects, service="test", credentials=credentials
    )
    try:
        # The reader admits what it reads: a refused message comes with no events.
        return [e async for d in bus.read([subject]) for e in d.events]
    finally:
        await bus.close()


async def projected(system, sql: str):
    """The rows ``sql`` reads from the system's Postgres schema."""
    import asyncpg

    conn = await asyncpg.connect(
        system.endpoints.pg_dsn, server_settings={"search_path": system.endpoints.prefix}
    )
    try:
        return await conn.fetch(sql)
    finally:
        await conn.close()
