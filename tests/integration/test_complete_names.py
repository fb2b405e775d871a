"""Completion of the running system's job and queue names, read from a real Postgres projection; and
the calls that read the projection load no bus client, no allocator and no tracing."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest
from muster.bus import Delivery
from muster.cli.completion_cmd import bash_script
from muster.cli.main import build_parser
from muster.events import (
    PodGroupCreated,
    PodGroupDeleted,
    PodSpec,
    QueueDeleted,
    QueueResource,
    QueueSpec,
    QueueUpserted,
    Resources,
)
from muster.store.sink import PostgresSink

pytestmark = pytest.mark.postgres

JOBS = ("train-alpha", "train-beta", "eval-gamma")
CANCELLED = "train-cancelled"


def job(name: str) -> PodGroupCreated:
    return PodGroupCreated(name=name, queue="team-a", pods=[PodSpec(resources=Resources(gpu=1))])


def queue(name: str) -> QueueUpserted:
    return QueueUpserted(queue=QueueSpec(name=name, resources={"gpu": QueueResource(quota=4)}))


@pytest.fixture
async def projected(pg_pool):
    """A projection of three queues (one since deleted) and four jobs (one since cancelled)."""
    messages = [
        [queue("team-a"), queue("team-b"), queue("gone")],
        [job(name) for name in (*JOBS, CANCELLED)],
        [PodGroupDeleted(name=CANCELLED), QueueDeleted(name="gone")],
    ]
    await PostgresSink(pg_pool).apply([Delivery("t.events", i + 1, m) for i, m in enumerate(messages)])


@pytest.fixture
def cli_env(endpoints, tmp_path) -> dict[str, str]:
    """How a user reaches this test's system."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MUSTER_", "OTEL_"))}
    env.update(
        MUSTER_HOME=str(tmp_path),
        MUSTER_NATS_URL=endpoints.nats_url,
        MUSTER_PG_DSN=endpoints.pg_dsn,
        MUSTER_PREFIX=endpoints.prefix,
    )
    return env


def complete(env: dict[str, str], kind: str, prefix: str = "") -> list[str]:
    done = subprocess.run(
        [sys.executable, "-m", "muster.cli.main", "__complete", kind, prefix],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.splitlines()


async def test_job_names_starting_with_what_was_typed_cancelled_ones_included(projected, cli_env):
    assert complete(cli_env, "jobs", "train-") == ["train-alpha", "train-beta", CANCELLED]
    assert complete(cli_env, "jobs") == sorted((*JOBS, CANCELLED))


async def test_only_jobs_not_finished_are_offered_to_cancel(projected, cli_env):
    assert complete(cli_env, "live-jobs", "train-") == ["train-alpha", "train-beta"]


async def test_queue_names_are_those_the_system_has(projected, cli_env):
    assert complete(cli_env, "queues") == ["team-a", "team-b"]
    assert complete(cli_env, "queues", "team-b") == ["team-b"]


async def test_a_prefix_is_taken_literally_not_as_a_pattern(projected, cli_env):
    assert complete(cli_env, "jobs", "%") == []
    assert complete(cli_env, "jobs", "train_") == []


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")
async def test_the_bash_script_completes_job_and_queue_names_through_the_helper(projected, cli_env, tmp_path):
    # The script calls the muster being completed: here, this interpreter running the CLI module.
    muster = tmp_path / "muster"
    muster.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m muster.cli.main "$@"\n')
    muster.chmod(0o755)
    script = bash_script(build_parser())

    def tab(*words: str) -> list[str]:
        line = " ".join(f"'{w}'" for w in words)
        probe = f'{script}\nCOMP_WORDS=("{muster}" {line}); COMP_CWORD={len(words)}; _muster; echo "${{COMPREPLY[@]}}"\n'
        done = subprocess.run(["bash", "-c", probe], env=cli_env, capture_output=True, text=True, check=True)
        return done.stdout.split()

    assert tab("why", "train-") == ["train-alpha", "train-beta", CANCELLED]
    assert tab("cancel", "train-") == ["train-alpha", "train-beta"]
    assert tab("run", "--gpus", "1", "--queue", "te") == ["team-a", "team-b"]


PROBE = """
import json, sys
from muster.cli.main import main
code = main(sys.argv[1:])
print(json.dumps([code, sorted(sys.modules)]), file=sys.stderr)
"""
NOT_NEEDED = ("nats", "numba", "numpy", "muster.scheduler", "opentelemetry", "yaml")


@pytest.mark.parametrize(
    "argv", [("status",), ("status", "--json"), ("why", "train-alpha"), ("__complete", "jobs", "t")]
)
async def test_reading_the_projection_loads_no_bus_client_allocator_or_tracing(projected, cli_env, argv):
    done = subprocess.run([sys.executable, "-c", PROBE, *argv], env=cli_env, capture_output=True, text=True)
    code, modules = json.loads(done.stderr.splitlines()[-1])
    assert code == 0
    assert [m for m in modules if m.split(".")[0] in NOT_NEEDED or m.startswith("muster.scheduler")] == []
