"""A secret variable on a real system: the pod sees its value, the log and Postgres never do."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest
from muster import events as ev
from muster.bus import NatsBus
from muster.store import connect

from tests.agent.conftest import CLI, POD_PYTHON, cli_env, events, muster, queues, read_json_lines
from tests.agent.test_live import registered
from tests.polling import wait_for

pytestmark = [pytest.mark.nats, pytest.mark.postgres, pytest.mark.slow]

PROBE = str(Path(__file__).with_name("probe.py"))
VALUE = "s3cr3t-VALUE-7c1f9a2e-never-logged"


def set_secret(system, name: str, value: str) -> None:
    """``muster secret set NAME`` with the value piped in, as a user would (never on the command line)."""
    result = subprocess.run(
        [sys.executable, "-c", CLI, "secret", "set", name],
        input=value + "\n", env=cli_env(system), capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr


def run_probe(system, out: Path, *flags: str) -> str:
    result = muster(
        system, "run", "--json", "--queue", "team", *flags, "--", POD_PYTHON, PROBE, str(out), "0"
    )
    return json.loads(result.stdout)["job"]


def stream_bytes(system) -> bytes:
    """Every message of the system's stream as stored, headers and body."""

    async def read() -> bytes:
        bus = await NatsBus.connect(system.endpoints.nats_url, system.endpoints.subjects, service="test")
        try:
            found = []
            for seq in range(1, await bus.last_seq() + 1):
                msg = await bus.js.get_msg(system.endpoints.subjects.stream, seq)
                found.append(repr(msg.headers).encode() + (msg.data or b""))
            return b"\n".join(found)
        finally:
            await bus.close()

    return asyncio.run(read())


def projected_text(system) -> str:
    """Every row of every table of the system's schema, once the projection has reached the stream's end."""

    async def read() -> str | None:
        bus = await NatsBus.connect(system.endpoints.nats_url, system.endpoints.subjects, service="test")
        end = await bus.last_seq()
        await bus.close()
        conn = await connect(system.endpoints.pg_dsn, system.endpoints.prefix)
        try:
            done = await conn.fetchval("SELECT stream_seq FROM checkpoints WHERE consumer = 'projector'") or 0
            if done < end:
                return None
            tables = await conn.fetch(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = $1",
                system.endpoints.prefix,
            )
            rows = []
            for table in tables:
                name = table["table_name"].replace('"', '""')
                rows += [r[0] for r in await conn.fetch(f'SELECT t::text FROM "{name}" t')]
            return "\n".join(rows)
        finally:
            await conn.close()

    return wait_for(lambda: asyncio.run(read()), what="the projection at the stream's end")


def test_a_pod_sees_its_secret_and_the_value_is_in_no_event_and_no_table(system, agents, pod_out):
    queues(system, "team")
    set_secret(system, "hf-token", VALUE)
    agents.start("node-a", 1)
    registered(system, "node-a")
    job = run_probe(system, pod_out, "--secret-env", "PROBE_EXTRA=hf-token")

    (start,) = wait_for(
        lambda: [e for e in read_json_lines(pod_out / "events.jsonl") if e["event"] == "start"],
        what="the pod",
    )
    assert start["env"]["PROBE_EXTRA"] == VALUE
    wait_for(lambda: [e for _, e in events(system) if isinstance(e, ev.PodCompleted)], what="PodCompleted")
    assert b"hf-token" in stream_bytes(system)  # the reference is there, so the scan reads the right stream
    assert VALUE.encode() not in stream_bytes(system)
    text = projected_text(system)
    assert job in text and "hf-token" in text
    assert VALUE not in text
    assert muster(system, "secret", "list").stdout == "hf-token\n"


def test_a_pod_whose_secret_is_missing_fails_naming_the_variable_and_the_secret(system, agents, pod_out):
    queues(system, "team")
    agents.start("node-a", 1)
    registered(system, "node-a")
    submitted = muster(system, "run", "--json", "--queue", "team", "--secret-env", "PROBE_EXTRA=no-such-secret",
                       "--", POD_PYTHON, PROBE, str(pod_out), "0")  # fmt: skip
    assert "secret 'no-such-secret' (PROBE_EXTRA) is not set" in submitted.stderr
    job = json.loads(submitted.stdout)["job"]

    (failed,) = wait_for(
        lambda: [e for _, e in events(system) if isinstance(e, ev.PodFailed) and e.job == job],
        what="PodFailed",
    )
    assert "PROBE_EXTRA" in failed.reason and "no-such-secret" in failed.reason
    assert failed.exit_code is None
    assert read_json_lines(pod_out / "events.jsonl") == []  # never started
    assert not [e for _, e in events(system) if isinstance(e, ev.PodBound) and e.job == job]
