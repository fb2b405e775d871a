"""The embedded default: a system's own NATS and Postgres under its home, side by side with another."""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
from pathlib import Path

import asyncpg
import nats
import pytest
from muster.runtime.embedded import embedded_servers
from muster.runtime.settings import Endpoints, Settings, write_endpoints

from tests.polling import wait_for

pytestmark = [pytest.mark.slow]


async def roundtrip(nats_url: str, pg_dsn: str, marker: str) -> tuple[str, int]:
    conn = await asyncpg.connect(pg_dsn)
    try:
        await conn.execute("CREATE TABLE IF NOT EXISTS marker (v text)")
        await conn.execute("INSERT INTO marker VALUES ($1)", marker)
        seen = await conn.fetchval("SELECT string_agg(v, ',') FROM marker")
    finally:
        await conn.close()
    nc = await nats.connect(nats_url)
    try:
        js = nc.jetstream()
        await js.add_stream(name="S", subjects=["s.>"])
        ack = await js.publish("s.x", marker.encode())
    finally:
        await nc.close()
    return seen, ack.seq


def test_two_homes_run_two_independent_systems_side_by_side(tmp_path):
    with embedded_servers(tmp_path / "one") as (n1, p1), embedded_servers(tmp_path / "two") as (n2, p2):
        assert n1 != n2 and p1 != p2
        assert all(
            url.startswith(("nats://127.0.0.1:", "postgresql://postgres@127.0.0.1:"))
            for url in (n1, n2, p1, p2)
        )
        assert asyncio.run(roundtrip(n1, p1, "one")) == ("one", 1)
        assert asyncio.run(roundtrip(n2, p2, "two")) == ("two", 1)
    assert (tmp_path / "one" / "nats").is_dir() and (tmp_path / "two" / "pg" / "PG_VERSION").exists()


def test_a_restarted_embedded_system_keeps_its_data(tmp_path):
    with embedded_servers(tmp_path) as (n, p):
        asyncio.run(roundtrip(n, p, "first"))
    with embedded_servers(tmp_path) as (n, p):
        seen, seq = asyncio.run(roundtrip(n, p, "second"))
    assert seen == "first,second" and seq == 2


def test_commands_find_the_system_recorded_in_their_home_unless_the_environment_names_one(tmp_path):
    write_endpoints(tmp_path, Endpoints(nats_url="nats://127.0.0.1:1", pg_dsn="postgresql://x@127.0.0.1:2/y"))
    recorded = Settings.from_env({"MUSTER_HOME": str(tmp_path)}).endpoints()
    assert recorded.nats_url == "nats://127.0.0.1:1"
    configured = Settings.from_env(
        {"MUSTER_HOME": str(tmp_path), "MUSTER_NATS_URL": "nats://elsewhere:4222"}
    ).endpoints()
    assert (
        configured.nats_url == "nats://elsewhere:4222" and configured.pg_dsn == "postgresql://x@127.0.0.1:2/y"
    )


OWNER = """
import sys, time
from pathlib import Path
from muster.runtime.embedded import EmbeddedNats, EmbeddedPostgres
home = Path(sys.argv[1])
servers = [EmbeddedNats(home).start(), EmbeddedPostgres(home).start()]
print(" ".join(str(s.proc.pid) for s in servers), flush=True)
time.sleep(600)
"""


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    # A child that exited but was not reaped yet counts as gone: it serves nothing.
    with contextlib.suppress(OSError):
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] == "Z"
    return False


def test_servers_whose_owner_is_killed_stop_with_it(tmp_path):
    owner = subprocess.Popen([sys.executable, "-c", OWNER, str(tmp_path)], stdout=subprocess.PIPE, text=True)
    try:
        pids = [int(pid) for pid in owner.stdout.readline().split()]
        assert len(pids) == 2 and not any(_gone(pid) for pid in pids)
    finally:
        owner.kill()
        owner.wait()
    wait_for(lambda: all(_gone(pid) for pid in pids), timeout=30, what="nats-server and postgres to stop")
