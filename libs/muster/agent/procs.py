"""The agent's processes: start a pod under its shim, signal it, learn how it ended.

Every pod runs as ``shim → command`` in a process group of its own, with
stdout and stderr appended to ``<dir>/logs/<stem>.log`` (``files.pod_stem``:
one per owner, job and pod), in the
environment, as the user and with the folder ``muster.agent.sandbox``
gives it. What was started is written to ``<dir>/pods.json`` so an agent
that restarts can adopt the pods that still run and learn how the others
ended. ``<dir>`` is the agent's alone (mode 0700): pods reach nothing in it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from muster.agent import shim
from muster.agent.files import pod_stem
from muster.agent.plan import PodKey, PodRun
from muster.agent.sandbox import PodFolders, RunAs, pod_environment, user_name

# Run as a script in isolated mode: it needs only the standard library, and its environment is the pod's.
SHIM = [sys.executable, "-I", shim.__file__]
# A failure's reason carries the last line its pod wrote (a Python exception, "CUDA error: out of
# memory"): read from the log's last few KiB, and kept short, since it goes into every event reader.
LAST_LINE_TAIL = 4096
LAST_LINE_CHARS = 200


def pod_env(run: PodRun, gpus: list[int], share: float, node: str, master: tuple[str, int]) -> dict[str, str]:
    """The variables muster gives a pod: its devices, its place in the gang, torchrun's rendezvous."""
    env = {
        "CUDA_VISIBLE_DEVICES": ",".join(str(g) for g in gpus),
        "MUSTER_JOB": run.job,
        "MUSTER_POD_INDEX": str(run.pod),
        "MUSTER_NODE": node,
        "MUSTER_QUEUE": run.queue,
        "RANK": str(run.pod),
        "WORLD_SIZE": str(run.world_size),
        "LOCAL_RANK": "0",
        "MASTER_ADDR": master[0],
        "MASTER_PORT": str(master[1]),
    }
    if share > 0:
        env["MUSTER_GPU_FRACTION"] = f"{share:g}"
    return env


def master_port(job: str) -> int:
    """A port for the gang's rendezvous, the same on every node (derived from the job's name)."""
    digest = sum((i + 1) * b for i, b in enumerate(job.encode())) % 20000
    return 29500 + digest


def start_banner(key: PodKey, node: str, at: float) -> str:
    """The line each run of a pod adds to its log before the pod's own output: which pod, where, and
    when (UTC, in the form people read, not epoch seconds)."""
    when = time.strftime("%Y-%m-%d %H:%M:%SZ", time.gmtime(at))
    return f"--- muster agent: starting {key[0]} pod {key[1]} on {node} at {when}\n"


@dataclass
class Record:
    """What the agent remembers of a started pod across its own restarts."""

    job: str
    pod: int
    seq: int
    pid: int
    started: float
    """Process start time as the kernel knows it (guards against a recycled pid)."""
    gpus: list[int]
    share: float
    owner: str = ""
    """The tenant whose job it is ('' for the system's own); with job and pod, it names the pod's files."""


def _start_ticks(pid: int) -> float:
    """The process's start time in clock ticks since boot (Linux), or 0 where unknown."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0.0
    return float(stat.rsplit(")", 1)[1].split()[19])


def alive(pid: int, started: float) -> bool:
    """Whether ``pid`` is still the process that was started at ``started``."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    if started and _start_ticks(pid) != started:
        return False
    # A zombie has ended: it only waits to be reaped.
    with contextlib.suppress(OSError):
        if Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z":
            return False
    return True


def _as_user(run_as: RunAs | None) -> list[str]:
    return [] if run_as is None else ["--user", f"{run_as.uid}:{run_as.gid}"]


class Processes:
    """The pods this agent runs, with their records on disk."""

    def __init__(self, directory: Path, node: str, folders: PodFolders):
        self.dir = directory
        self.node = node
        self.folders = folders
        self.logs = directory / "logs"
        self.exits = directory / "exits"
        directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        directory.chmod(0o700)
        self.logs.mkdir(parents=True, exist_ok=True)
        self.exits.mkdir(parents=True, exist_ok=True)
        self.state_path = directory / "pods.json"
        self.records: dict[PodKey, Record] = {}
        self.children: dict[PodKey, asyncio.subprocess.Process] = {}
        self.owners: dict[PodKey, str] = {}
        """Whose each pod this agent holds is: from its start, or its record, until it is forgotten."""

    def stem(self, key: PodKey, owner: str | None = None) -> str:
        """What the pod's folder, log and exit file are named; ``owner`` by default the one it was started for."""
        return pod_stem(self.owners.get(key, "") if owner is None else owner, *key)

    def log_path(self, key: PodKey, owner: str | None = None) -> Path:
        return self.logs / f"{self.stem(key, owner)}.log"

    def last_line(self, key: PodKey) -> str:
        """The last non-empty line of the pod's log, cut to ``LAST_LINE_CHARS`` ('' if none)."""
        try:
            with open(self.log_path(key), "rb") as out:
                out.seek(0, os.SEEK_END)
                out.seek(max(0, out.tell() - LAST_LINE_TAIL))
                tail = out.read()
        except OSError:
            return ""
        lines = [line.strip() for line in tail.decode("utf-8", "replace").splitlines() if line.strip()]
        if not lines:
            return ""
        line = lines[-1]
        return line if len(line) <= LAST_LINE_CHARS else line[: LAST_LINE_CHARS - 1] + "…"

    def exit_path(self, key: PodKey) -> Path:
        return self.exits / f"{self.stem(key)}.exit"

    # -- records ------------------------------------------------------------------------------

    def load(self) -> list[Record]:
        """The records a previous run of the agent left."""
        try:
            data = json.loads(self.state_path.read_text())
        except (FileNotFoundError, json.JSONDecodeError):
            return []
        out = [Record(**item) for item in data.get("pods", [])]
        self.records = {(r.job, r.pod): r for r in out}
        self.owners = {(r.job, r.pod): r.owner for r in out}
        return out

    def save(self) -> None:
        tmp = self.state_path.with_suffix(".tmp")
        pods = [asdict(self.records[k]) for k in sorted(self.records)]
        tmp.write_text(json.dumps({"node": self.node, "pods": pods}, indent=1))
        os.replace(tmp, self.state_path)

    def forget(self, key: PodKey) -> None:
        self.records.pop(key, None)
        self.children.pop(key, None)
        self.exit_path(key).unlink(missing_ok=True)
        self.folders.remove(self.stem(key))
        self.owners.pop(key, None)
        self.save()

    def recorded_exit(self, key: PodKey) -> int | None:
        """The exit status the shim wrote, if it did."""
        try:
            return int(self.exit_path(key).read_text().strip())
        except (FileNotFoundError, ValueError):
            return None

    # -- acting -------------------------------------------------------------------------------

    async def start(self, key: PodKey, seq: int, command: list[str], spec_env: dict[str, str],
                    variables: dict[str, str], workdir: str | None, gpus: list[int],
                    share: float, *, owner: str = "") -> asyncio.subprocess.Process:  # fmt: skip
        """Start the pod's command under its shim, in a fresh folder of its own, with the spec's
        environment and muster's ``variables`` and nothing of the agent's; raises OSError when it
        cannot start. ``owner``: whose job it is (the pod's files are its own)."""
        self.owners[key] = owner
        self.exit_path(key).unlink(missing_ok=True)
        folder = self.folders.make(self.stem(key))
        run_as = self.folders.run_as
        env = pod_environment(spec_env, variables, folder, user_name(run_as))
        log = self.log_path(key)
        with open(log, "ab") as out:
            out.write(start_banner(key, self.node, time.time()).encode())
            out.flush()
            proc = await asyncio.create_subprocess_exec(
                *SHIM, str(os.getpid()), str(self.exit_path(key)), *_as_user(run_as),
                "--cwd", workdir or str(folder), "--", *command,
                stdin=asyncio.subprocess.PIPE, stdout=out, stderr=asyncio.subprocess.STDOUT,
                cwd=folder, env={}, start_new_session=True,
            )  # fmt: skip
        # On a pipe, not in the shim's own environment: nothing the interpreter adds gets mixed in.
        proc.stdin.write(json.dumps(env).encode())
        await proc.stdin.drain()
        proc.stdin.close()
        self.children[key] = proc
        self.records[key] = Record(
            job=key[0],
            pod=key[1],
            seq=seq,
            pid=proc.pid,
            started=_start_ticks(proc.pid),
            gpus=gpus,
            share=share,
            owner=owner,
        )
        self.save()
        return proc

    def signal(self, key: PodKey, sig: int, pid: int | None = None) -> None:
        """Send ``sig`` to the pod's whole process group (the one led by ``pid``, when given:
        a later run of the same pod must not get a signal meant for an earlier one)."""
        if pid is None:
            record = self.records.get(key)
            if record is None:
                return
            pid = record.pid
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, sig)

    def pid(self, key: PodKey) -> int | None:
        record = self.records.get(key)
        return record.pid if record is not None else None

    async def wait(self, key: PodKey) -> int | None:
        """Wait for the pod to end; its exit status (negative -N: signal N), or None if unknown."""
        proc = self.children.get(key)
        if proc is not None:
            code = await proc.wait()
            recorded = self.recorded_exit(key)
            return recorded if recorded is not None else code
        record = self.records.get(key)
        if record is None:
            return None
        while alive(record.pid, record.started):
            await asyncio.sleep(0.2)
        return self.recorded_exit(key)

    async def stop(self, key: PodKey, grace: float) -> None:
        """SIGTERM to the pod's group; SIGKILL if it still runs after ``grace`` seconds."""
        record = self.records.get(key)
        if record is None:
            return
        self.signal(key, signal.SIGTERM, record.pid)
        deadline = time.monotonic() + grace
        while alive(record.pid, record.started) and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        self.signal(key, signal.SIGKILL, record.pid)
