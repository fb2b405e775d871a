"""How long the command line keeps a person waiting (issue #27): wall time of fresh ``muster`` processes.

Each call is a new process, interpreter start and imports included, as a shell runs it; each is run
once to warm the file cache, then ``runs`` times, and the figure is the median. First the calls that
need no system (``--help``, ``--version``, a command's ``--help``, ``group FILE --json``, the
completion script); then, on a small system the benchmark starts itself (embedded servers unless
``MUSTER_NATS_URL`` / ``MUSTER_PG_DSN`` name running ones, the services that place jobs, ``NODES``
simulated nodes and ``JOBS`` jobs of which some wait), ``status``, ``status --json``, ``why JOB`` and
the completion helper.

Targets: ``LOCAL_TARGET_MS`` for a call that needs no system, ``SYSTEM_TARGET_MS`` for one that reads it.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

LOCAL_TARGET_MS = 300.0
SYSTEM_TARGET_MS = 500.0
RUNS, QUICK_RUNS = 7, 3
NODES = 4
"""16-GPU nodes of the benchmark's system."""
JOBS = 24
"""4-GPU jobs submitted to it: 16 fit on the nodes, the rest wait."""
JOB_GPUS = 4
QUEUE = "bench-cli"
SERVICES = ("projector", "queue_controller", "podgrouper", "allocator", "binder")
SETTLE_TIMEOUT = 120.0

MANIFEST = """\
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: bench-mnist}
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      template: {spec: {containers: [{name: pytorch, resources: {limits: {nvidia.com/gpu: 1}}}]}}
    Worker:
      replicas: 2
      template: {spec: {containers: [{name: pytorch, resources: {limits: {nvidia.com/gpu: 1}}}]}}
"""


@dataclass(frozen=True)
class Call:
    """One command line to time: ``muster`` followed by ``args``."""

    args: tuple[str, ...]
    target_ms: float
    shown: str | None = None
    """How the results name it, when not by its arguments (a temporary file's path)."""

    @property
    def name(self) -> str:
        return self.shown or " ".join(("muster", *self.args))


def muster_command() -> list[str]:
    """How a person runs muster: the installed ``muster`` script beside this interpreter, else the module."""
    script = Path(sys.executable).with_name("muster")
    return [str(script)] if script.exists() else [sys.executable, "-m", "muster.cli.main"]


def wall_times(command: list[str], env: dict[str, str], runs: int) -> list[float]:
    """Seconds each of ``runs`` fresh runs of ``command`` took, after one run not counted; raises when a
    run fails, as its time would mean nothing."""
    times = []
    for i in range(runs + 1):
        started = time.perf_counter()
        done = subprocess.run(command, env=env, stdin=subprocess.DEVNULL, capture_output=True)
        took = time.perf_counter() - started
        if done.returncode != 0:
            raise RuntimeError(
                f"{' '.join(command)} exited {done.returncode}: {done.stderr.decode(errors='replace')[-500:]}"
            )
        if i:
            times.append(took)
    return times


def row(call: Call, times: list[float], **extra) -> dict:
    """A result row: the median in milliseconds against the call's target, and the spread."""
    median = statistics.median(times) * 1e3
    return {
        "name": call.name,
        "value": round(median, 1),
        "unit": "ms (median)",
        "target": call.target_ms,
        "met": median <= call.target_ms,
        "runs": len(times),
        "min_ms": round(min(times) * 1e3, 1),
        "max_ms": round(max(times) * 1e3, 1),
        **extra,
    }


def local_calls(manifest: Path) -> list[Call]:
    """The calls that need no running system."""
    return [
        Call(("--help",), LOCAL_TARGET_MS),
        Call(("--version",), LOCAL_TARGET_MS),
        Call(("status", "--help"), LOCAL_TARGET_MS),
        Call(("why", "--help"), LOCAL_TARGET_MS),
        Call(("group", str(manifest), "--json"), LOCAL_TARGET_MS, f"muster group {manifest.name} --json"),
        Call(("completion", "bash"), LOCAL_TARGET_MS),
    ]


def system_calls(waiting_job: str) -> list[Call]:
    """The calls that read the running system."""
    return [
        Call(("status",), SYSTEM_TARGET_MS),
        Call(("status", "--json"), SYSTEM_TARGET_MS),
        Call(("why", waiting_job), SYSTEM_TARGET_MS),
        Call(("__complete", "jobs", "cli-"), SYSTEM_TARGET_MS),
    ]


def _measure(calls: list[Call], env: dict[str, str], runs: int, progress, **extra) -> list[dict]:
    rows = []
    for call in calls:
        progress(f"cli: {call.name}")
        rows.append(row(call, wall_times([*muster_command(), *call.args], env, runs), **extra))
    return rows


def _job_manifest(i: int) -> dict:
    from muster.grouping.muster_job import manifest

    pods = [{"count": 1, "resources": {"gpu": JOB_GPUS, "cpu": 1}}]
    return manifest({"name": f"cli-{i:03d}", "queue": QUEUE, "pods": pods})


async def _populate(endpoints) -> str:
    """Nodes, a queue and jobs on the system, waited for until the projection shows every job that fits
    running; the name of a job that waits."""
    from muster.bench.e2e import GPUS_PER_NODE, fleet
    from muster.cli.recorded import projection
    from muster.events import QueueResource, QueueSpec
    from muster.sdk import Client

    async with await Client.connect(endpoints) as client:
        await client.register_nodes(fleet(NODES), tag="bench-cli")
        unlimited = QueueResource(quota=-1, over_quota_weight=1, limit=-1)
        await client.apply_queues([QueueSpec(name=QUEUE, resources={"gpu": unlimited})])
        await client.submit(
            [_job_manifest(i) for i in range(JOBS)], submitted_at=time.time(), uid="bench/cli"
        )
    fitting = NODES * GPUS_PER_NODE // JOB_GPUS
    deadline = time.monotonic() + SETTLE_TIMEOUT
    async with projection(endpoints) as conn:
        while time.monotonic() < deadline:
            counts = dict(await conn.fetch("SELECT status, count(*) FROM jobs GROUP BY status"))
            if counts.get("running", 0) >= fitting and sum(counts.values()) >= JOBS:
                return await conn.fetchval(
                    "SELECT name FROM jobs WHERE status = 'pending' ORDER BY name LIMIT 1"
                )
            await asyncio.sleep(0.2)
    raise RuntimeError(f"the benchmark's system did not run {fitting} jobs within {SETTLE_TIMEOUT:g} s")


async def _forget(endpoints) -> None:
    """Remove the benchmark's stream and schema from servers it was given (embedded ones go with their
    home)."""
    import asyncpg

    from muster.bus import NatsBus
    from muster.store import schema_for

    bus = await NatsBus.connect(endpoints.nats_url, endpoints.subjects, service="bench-cli")
    try:
        await bus.js.delete_stream(endpoints.subjects.stream)
    finally:
        await bus.close()
    conn = await asyncpg.connect(endpoints.pg_dsn)
    try:
        await conn.execute(f'DROP SCHEMA IF EXISTS "{schema_for(endpoints.prefix)}" CASCADE')
    finally:
        await conn.close()


def _on_a_system(runs: int, progress) -> list[dict]:
    from muster.runtime.settings import Endpoints, Settings
    from muster.runtime.system import running_system

    base = Settings.from_env()
    prefix = f"cli{uuid.uuid4().hex[:8]}"
    # As a person runs the CLI: the system found through its home, nothing else set.
    env = {
        k: v for k, v in os.environ.items() if k not in ("MUSTER_NATS_URL", "MUSTER_PG_DSN", "MUSTER_PREFIX")
    }
    try:
        with tempfile.TemporaryDirectory(prefix="muster-bench-cli-") as home:
            settings = Settings(home=Path(home), nats_url=base.nats_url, pg_dsn=base.pg_dsn, prefix=prefix)
            progress(f"cli: starting a system of {NODES} nodes and {JOBS} jobs")
            with running_system(
                settings, services=SERVICES, service_env={"MUSTER_CYCLE_INTERVAL": "0.02"}
            ) as system:
                waiting = asyncio.run(_populate(system.endpoints))
                return _measure(
                    system_calls(waiting),
                    {**env, "MUSTER_HOME": home},
                    runs,
                    progress,
                    nodes=NODES,
                    jobs=JOBS,
                )
    finally:
        if base.nats_url and base.pg_dsn:
            asyncio.run(_forget(Endpoints(nats_url=base.nats_url, pg_dsn=base.pg_dsn, prefix=prefix)))


def run(
    quick: bool = False, progress: Callable[[str], None] = lambda _msg: None, runs: int | None = None
) -> list[dict]:
    """Every call's row: those that need no system, then those against a small system of its own;
    each call timed ``runs`` times (default ``RUNS``, ``QUICK_RUNS`` when ``quick``)."""
    runs = runs or (QUICK_RUNS if quick else RUNS)
    with tempfile.TemporaryDirectory(prefix="muster-bench-cli-") as folder:
        manifest = Path(folder) / "pytorchjob.yaml"
        manifest.write_text(MANIFEST)
        # No system to find: a call that needs none must not look for one.
        env = {**os.environ, "MUSTER_HOME": folder}
        rows = _measure(local_calls(manifest), env, runs, progress)
    return rows + _on_a_system(runs, progress)
