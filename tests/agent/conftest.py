"""A live system with real agents on this machine: every service as a process, agents as processes."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from muster.bus import NatsBus
from muster.events import Event, QueueResource, QueueSpec
from muster.runtime.settings import Endpoints, Settings
from muster.runtime.system import SERVICES, ServiceProcess, System, running_system
from muster.sdk import Client

NODE_TIMEOUT = 3.0
HEARTBEAT = 0.5

CLI = "import sys; from muster.cli.main import main; sys.exit(main(sys.argv[1:]))"
# The podgrouper with the Command kind installed, whether or not its handlers import it yet.
PODGROUPER = (
    "import muster.grouping.command_job; from muster.service import service_main; "
    "from services.podgrouper.app import run; service_main('podgrouper', run)"
)


def runnable_by_anyone(path: str) -> bool:
    """Whether every user may execute ``path``: it and each folder above it have the others' x bit."""
    real = Path(os.path.realpath(path))
    if not real.is_file():
        return False
    return all(p.stat().st_mode & stat.S_IXOTH for p in (real, *real.parents))


def _pod_python() -> str | None:
    """A Python pods can run. An agent running as root runs them as nobody, who may not reach an
    interpreter kept under /root (as pyenv's are)."""
    if os.geteuid() != 0:
        return sys.executable
    candidates = (sys.executable, "/usr/bin/python3", "/usr/local/bin/python3")
    return next((c for c in candidates if runnable_by_anyone(c)), None)


POD_PYTHON = _pod_python()


def cli_env(system: System) -> dict[str, str]:
    env = dict(os.environ)
    for key in ("MUSTER_NATS_URL", "MUSTER_PG_DSN", "MUSTER_PREFIX"):
        env.pop(key, None)
    env["MUSTER_HOME"] = str(system.settings.home)
    return env


def muster(system: System, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    """The real CLI against the running system, as a user would run it."""
    result = subprocess.run(
        [sys.executable, "-c", CLI, *args], env=cli_env(system), capture_output=True, text=True, timeout=60
    )
    if check and result.returncode != 0:
        raise AssertionError(
            f"muster {' '.join(args)} exited {result.returncode}:\n{result.stdout}\n{result.stderr}"
        )
    return result


@dataclass
class Agents:
    system: System
    procs: dict[str, subprocess.Popen] = field(default_factory=dict)

    def start(self, node: str, gpus: int, *extra: str, env: dict[str, str] | None = None) -> subprocess.Popen:
        log = open(self.system.settings.home / f"agent-{node}.log", "ab")  # noqa: SIM115 (lives with the process)
        proc = subprocess.Popen(
            [sys.executable, "-c", CLI, "agent", "--node", node, "--gpus", str(gpus), "--gpu-memory", "80Gi",
             "--cpu", "8", "--memory", "32Gi", "--heartbeat", str(HEARTBEAT), "--grace-period", "5", *extra],
            env={**cli_env(self.system), **(env or {})}, stdout=log, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )  # fmt: skip
        self.procs[node] = proc
        return proc

    def kill(self, node: str, sig: int = signal.SIGKILL) -> None:
        proc = self.procs.pop(node)
        proc.send_signal(sig)
        proc.wait(30)

    def stop_all(self) -> None:
        for proc in self.procs.values():
            proc.send_signal(signal.SIGTERM)
        for node in list(self.procs):
            self.procs.pop(node).wait(30)


@pytest.fixture
def node_timeout() -> float:
    """Seconds without a heartbeat before the node monitor declares a node lost; a test parametrizes it
    to give a node longer."""
    return NODE_TIMEOUT


@pytest.fixture
def system(tmp_path: Path, servers: Endpoints, prefix: str, node_timeout: float):
    """Every service (and the node monitor) against this test's own stream and schema."""
    settings = Settings(
        home=tmp_path / "home", nats_url=servers.nats_url, pg_dsn=servers.pg_dsn, prefix=prefix
    )
    env = {"MUSTER_CYCLE_INTERVAL": "0.02", "MUSTER_NODE_TIMEOUT": str(node_timeout)}
    others = tuple(name for name in SERVICES if name != "podgrouper")
    with running_system(settings, services=others, service_env=env) as system:
        log = settings.home / "logs" / "podgrouper.log"
        with open(log, "ab") as out:
            proc = subprocess.Popen(
                [sys.executable, "-c", PODGROUPER], env=system.env(), stdin=subprocess.DEVNULL, stdout=out,
                stderr=subprocess.STDOUT,
            )  # fmt: skip
        system.processes["podgrouper"] = ServiceProcess("podgrouper", proc, log)
        if "nodewatch" not in system.processes:
            system.start_service("nodewatch")
        yield system


@pytest.fixture
def agents(system: System):
    agents = Agents(system)
    try:
        yield agents
    finally:
        agents.stop_all()


@pytest.fixture
def pod_out():
    """A folder pods write what they saw into: open to every user, since pods may run as nobody."""
    if POD_PYTHON is None:
        pytest.skip("no Python that an unprivileged pod user may run (pods run as nobody under root)")
    folder = Path(tempfile.mkdtemp(prefix="muster-pod-out-"))
    folder.chmod(0o777)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def queues(system: System, *names: str, quota: float = 0.0) -> None:
    async def apply() -> None:
        async with await Client.connect(system.endpoints) as client:
            specs = [
                QueueSpec(name=n, resources={"gpu": QueueResource(quota=quota)}, order=i)
                for i, n in enumerate(names)
            ]
            await client.apply_queues(specs)

    asyncio.run(apply())


def events(system: System) -> list[tuple[int, Event]]:
    """Every event of the system's stream so far, with its stream sequence."""

    async def read() -> list[tuple[int, Event]]:
        bus = await NatsBus.connect(system.endpoints.nats_url, system.endpoints.subjects, service="test")
        try:
            return [(d.seq, e) async for d in bus.read() for e in d.events]
        finally:
            await bus.close()

    return asyncio.run(read())


def read_json_lines(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
