"""The whole live path, measured: submit → group → allocate → bind → Postgres.

``run_e2e`` starts a system (embedded servers unless configured, every
service as a process, the simulated fleet), registers ``nodes`` 16-GPU nodes,
submits ``pods`` single-GPU jobs and reports sustained binds per second —
counted as pods confirmed bound *and* visible in Postgres, from the first
submission to the last confirmation (cli.md) — and submit → bound latency.
Beside it, ``binds_per_second_until_projected`` times the run until Postgres
shows every bind, the stricter measure. With ``rate``, jobs are offered at
that many per second instead of all at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import tempfile
import time
import uuid
from pathlib import Path

import asyncpg
import msgspec

from muster.bus.nats import NatsBus
from muster.events import (
    BindRequested,
    LeaderElected,
    NodeSpec,
    PodBound,
    QueueResource,
    QueueSpec,
    Resources,
    decode_envelope,
)
from muster.grouping.muster_job import manifest
from muster.lease import LeaseRecord, lease_bucket
from muster.runtime.security import NatsCredentials
from muster.runtime.settings import Settings
from muster.runtime.system import running_system
from muster.sdk import Client
from muster.store import schema_for

SUBMISSION_BATCH = 1000  # jobs per WorkloadSubmitted when offering everything at once
# Enough devices that every pod of the spec's run (10k nodes, 100k single-GPU pods) can bind.
GPUS_PER_NODE = 16
SERVICES = ("projector", "queue_controller", "podgrouper", "allocator", "binder")


def fleet(nodes: int) -> list[NodeSpec]:
    return [
        NodeSpec(
            name=f"node-{i:05d}",
            resources=Resources(gpu=GPUS_PER_NODE, gpu_memory=80 * 2**30, cpu=256_000, memory=2**41),
        )
        for i in range(nodes)
    ]


def job(i: int, prefix: str = "job", queue: str = "bench") -> dict:
    return manifest(
        {
            "name": f"{prefix}-{i:06d}",
            "queue": queue,
            "pods": [{"count": 1, "resources": {"gpu": 1, "cpu": 1}}],
        }
    )


WARM_UP = 50  # jobs bound before the clock starts: kernels compiled, caches warm


async def _leader_elected(client: Client) -> bool:
    async for d in client.bus.read([client.subjects.decisions("default")]):
        if any(type(e).__name__ == "LeaderElected" for e in d.events):
            return True
    return False


async def _warm_up(client: Client, conn: asyncpg.Connection) -> None:
    """Wait for a leader, then push a few jobs through every service."""
    while not await _leader_elected(client):
        await asyncio.sleep(0.1)
    await client.submit([job(i, "warm") for i in range(WARM_UP)], submitted_at=time.time(), uid="bench/warm")
    while await _bound(conn, "warm-") < WARM_UP:
        await asyncio.sleep(0.05)


class _Follower:
    """A reader of the stream running beside the benchmark until ``stop``."""

    _task: asyncio.Task | None = None

    async def stop(self) -> None:
        if self._task is not None and not self._task.done():
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task


class BoundWatch(_Follower):
    """Follows the binder's confirmations on the stream: how many of the run's pods are bound, and the
    stream position of the message that confirmed the last of them.

    Waiting for Postgres is then one look at the projector's checkpoint, instead of counting the pods
    table again and again (which, at 100k pods, cost Postgres a good part of a core by itself).
    """

    def __init__(self, client: Client, prefix: str, total: int):
        self.client, self.prefix, self.total = client, prefix, total
        self.bound: set[tuple[str, int]] = set()
        self.complete_seq: int | None = None
        self.complete_at: float | None = None
        """When the last confirmation was seen on the stream (before Postgres had it)."""

    async def start(self) -> None:
        sub = await self.client.bus.js.subscribe(self.client.subjects.pods("*"), ordered_consumer=True)
        self._task = asyncio.create_task(self._follow(sub))

    async def _follow(self, sub) -> None:
        try:
            while self.complete_seq is None:
                msg = await sub.next_msg(timeout=None)
                for event in decode_envelope(msg.data):
                    if isinstance(event, PodBound) and event.job.startswith(self.prefix):
                        self.bound.add((event.job, event.pod))
                if len(self.bound) >= self.total:
                    self.complete_seq = msg.metadata.sequence.stream
                    self.complete_at = time.time()
        finally:
            await sub.unsubscribe()


async def _projected_to(conn: asyncpg.Connection) -> int:
    return await conn.fetchval("SELECT stream_seq FROM checkpoints WHERE consumer = 'projector'") or 0


async def _bound(conn: asyncpg.Connection, prefix: str = "") -> int:
    return await conn.fetchval(
        "SELECT count(*) FROM pods WHERE status = 'bound' AND job LIKE $1", prefix + "%"
    )


def _cpu_seconds(pid: int) -> float:
    """User + system CPU a process has used so far (0 where /proc is not there to ask)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _machine_cpu_seconds() -> float:
    """Busy CPU seconds of the whole machine so far, all cores."""
    user, nice, system, _idle, _iowait, irq, softirq, *_ = map(
        int, Path("/proc/stat").read_text().split()[1:11]
    )
    return (user + nice + system + irq + softirq) / os.sysconf("SC_CLK_TCK")


# Server processes by their command name: their CPU is reported beside the services'.
SERVER_COMMANDS = {"nats-server": "nats", "postgres": "postgres"}


def _processes() -> list[tuple[int, int, str, str]]:
    """(pid, parent pid, command name, command line) of every process we may read."""
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            command = (entry / "comm").read_text().strip()
            parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            line = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except (OSError, ValueError, IndexError):
            continue
        out.append((int(entry.name), parent, command, line))
    return out


def _server_cpu_seconds(home: Path | None) -> dict[str, dict[int, float]]:
    """CPU used so far by each NATS and Postgres process of this run, by pid.

    Embedded servers are the ones whose command line names the run's home (and, for Postgres, their
    children, the backends); servers the machine runs itself are counted whole.
    """
    processes = _processes()
    ours = {
        pid
        for pid, _, command, line in processes
        if command in SERVER_COMMANDS and home and str(home) in line
    }
    out: dict[str, dict[int, float]] = {label: {} for label in SERVER_COMMANDS.values()}
    for pid, parent, command, _ in processes:
        label = SERVER_COMMANDS.get(command)
        if label is not None and (not ours or pid in ours or parent in ours):
            out[label][pid] = _cpu_seconds(pid)
    return out


class CpuMeter:
    """CPU seconds spent per service, by NATS, by Postgres and by the rest of the machine, over a window.

    The rest ("other") is the whole machine's busy time minus all of those: on a quiet machine it is
    small; when it is not, the run shared the machine with something else.
    """

    def __init__(self, processes: dict[str, int], home: Path | None = None):
        self.processes = processes
        self.home = home
        self.start = self._read()
        self.start_servers = _server_cpu_seconds(home) if Path("/proc").exists() else {}

    def _read(self) -> dict[str, float]:
        sample = {name: _cpu_seconds(pid) for name, pid in self.processes.items()}
        sample["driver"] = _cpu_seconds(os.getpid())
        sample["machine"] = _machine_cpu_seconds() if Path("/proc/stat").exists() else 0.0
        return sample

    def spent(self) -> dict[str, float]:
        end = self._read()
        spent = {name: round(end[name] - self.start[name], 2) for name in end}
        machine = spent.pop("machine")
        if self.start_servers:
            for label, pids in _server_cpu_seconds(self.home).items():
                before = self.start_servers.get(label, {})
                spent[label] = round(sum(cpu - before.get(pid, 0.0) for pid, cpu in pids.items()), 2)
        spent["other"] = round(machine - sum(spent.values()), 2)
        return spent


async def _drive(
    endpoints,
    nodes: int,
    pods: int,
    rate: float | None,
    progress,
    processes: dict[str, int] | None = None,
    home: Path | None = None,
) -> dict:
    client = await Client.connect(endpoints)
    conn = await asyncpg.connect(
        endpoints.pg_dsn, server_settings={"search_path": schema_for(endpoints.prefix)}
    )
    try:
        await client.register_nodes(fleet(nodes), tag="bench")
        unlimited = QueueResource(quota=-1, over_quota_weight=1, limit=-1)
        await client.apply_queues([QueueSpec(name="bench", resources={"gpu": unlimited})])
        await _warm_up(client, conn)
        jobs = [job(i) for i in range(pods)]
        watch = BoundWatch(client, "job-", pods)
        await watch.start()
        meter = CpuMeter(processes or {}, home)
        start = time.time()
        if rate is None:
            for b in range(0, pods, SUBMISSION_BATCH):
                batch = jobs[b : b + SUBMISSION_BATCH]
                await client.submit(batch, submitted_at=time.time(), uid=f"bench/{b}")
        else:
            tick = 0.05
            per_tick = max(1, round(rate * tick))
            for b in range(0, pods, per_tick):
                due = start + (b / rate)
                await asyncio.sleep(max(0.0, due - time.time()))
                await client.submit(jobs[b : b + per_tick], submitted_at=time.time(), uid=f"bench/{b}")
        submitted = time.time()
        deadline = submitted + max(120.0, pods / 500)
        while time.time() < deadline and (
            watch.complete_seq is None or await _projected_to(conn) < watch.complete_seq
        ):
            progress(len(watch.bound), pods)
            await asyncio.sleep(0.02)
        finished = time.time()
        cpu = meter.spent()
        await watch.stop()
        bound = await _bound(conn, "job-")  # what Postgres shows, counted once
        progress(bound, pods)
        latencies = await conn.fetch(
            "SELECT ((e.payload->>'at')::float8 - j.submitted_at) * 1000.0 AS ms FROM events e"
            " JOIN jobs j ON j.name = e.payload->>'job' WHERE e.type = 'PodBound' AND j.name LIKE 'job-%' ORDER BY ms"
        )
        ms = [r["ms"] for r in latencies]
        # cli.md: pods confirmed bound by the binder and visible in Postgres, from first submission to last
        # confirmation. `bound` is counted in Postgres once the projection has reached the last confirmation.
        confirmed = watch.complete_at if watch.complete_at is not None else finished
        return {
            "nodes": nodes,
            "pods": pods,
            "bound": bound,
            "binds_per_second": _rate(bound, confirmed - start),
            "latency_ms": {"p50": _pct(ms, 0.50), "p99": _pct(ms, 0.99)},
            "offered_rate": rate,
            "submit_seconds": round(submitted - start, 3),
            "confirmed_seconds": round(confirmed - start, 3),
            # until the projection shows every bind too: the stricter measure, beside the contract's
            "total_seconds": round(finished - start, 3),
            "binds_per_second_until_projected": _rate(bound, finished - start),
            "cpu_seconds": cpu,
        }
    finally:
        await conn.close()
        await client.close()


def _rate(count: int, seconds: float) -> float:
    return round(count / seconds, 1) if seconds > 0 else 0.0


def _pct(values: list[float], q: float) -> float | None:
    if not values:
        return None
    return round(values[min(len(values) - 1, int(q * len(values)))], 2)


def run_e2e(nodes: int, pods: int, rate: float | None = None, progress=lambda done, total: None) -> dict:
    """One measured run on a system of its own (fresh stream and schema)."""
    base = Settings.from_env()
    with tempfile.TemporaryDirectory(prefix="muster-bench-") as home:
        settings = Settings(
            home=Path(home),
            nats_url=base.nats_url,
            pg_dsn=base.pg_dsn,
            prefix=f"bench{uuid.uuid4().hex[:8]}",
        )
        env = {"MUSTER_CYCLE_INTERVAL": "0.02"}
        with running_system(settings, services=SERVICES, service_env=env) as system:
            pids = {name: p.proc.pid for name, p in system.processes.items()}
            return asyncio.run(_drive(system.endpoints, nodes, pods, rate, progress, pids, Path(home)))


def stage(what: str) -> None:
    if os.environ.get("MUSTER_BENCH_TRACE"):
        print(f"{time.strftime('%H:%M:%S')} {what}", file=sys.stderr, flush=True)


FAILOVER_TARGET_S = 2.0  # issue #17: the standby's first decision at most this long after the kill
FAILOVER_TTL = 5.0
"""The allocator's default lease: a standby sees a killed leader gone (``muster.liveness``) long
before its lease lapses, so the ttl no longer sets how soon it takes over."""


class DecisionWatch(_Follower):
    """Follows a pool's decisions subject from a stream position on, noting when the stream stored
    the election of a given epoch and the first bind decided under it.

    The times are the stream's own (each message's store time), not when this reader got round to
    them, so a slow reader does not add to the figure.
    """

    def __init__(self, client: Client, pool: str, epoch: int):
        self.client, self.pool, self.epoch = client, pool, epoch
        self.elected_at: float | None = None
        self.first_bind_at: float | None = None
        self.done = asyncio.Event()

    async def start(self) -> None:
        from nats.js import api

        start = await self.client.bus.last_seq() + 1
        sub = await self.client.bus.js.subscribe(
            self.client.subjects.decisions(self.pool),
            ordered_consumer=True,
            deliver_policy=api.DeliverPolicy.BY_START_SEQUENCE,
            config=api.ConsumerConfig(opt_start_seq=start),
        )
        self._task = asyncio.create_task(self._follow(sub))

    async def _follow(self, sub) -> None:
        try:
            while self.first_bind_at is None:
                msg = await sub.next_msg(timeout=None)
                stored = msg.metadata.timestamp.timestamp()
                for event in decode_envelope(msg.data):
                    if isinstance(event, LeaderElected) and event.epoch >= self.epoch:
                        self.elected_at = self.elected_at or stored
                    elif isinstance(event, BindRequested) and event.epoch >= self.epoch:
                        self.first_bind_at = stored
                        break
            self.done.set()
        finally:
            await sub.unsubscribe()


async def _lease_reader(system) -> NatsBus:
    """A connection allowed to read the lease bucket: the allocator's login (the client's is not)."""
    env = system.env("allocator")
    user = env.get("MUSTER_NATS_USER")
    credentials = (
        NatsCredentials(user, env.get("MUSTER_NATS_PASSWORD", ""), env.get("MUSTER_NATS_CA"))
        if user
        else None
    )
    return await NatsBus.connect(
        system.endpoints.nats_url, system.endpoints.subjects, service="bench-lease", credentials=credentials
    )


async def _leader(bus: NatsBus, pool: str) -> LeaseRecord:
    """The pool's lease as its bucket holds it now."""
    kv = await lease_bucket(bus.js, bus.subjects.stream)
    entry = await kv.get(f"pool.{pool}")
    return msgspec.json.decode(entry.value, type=LeaseRecord)


async def _failover(system, nodes: int, pods: int, ttl: float) -> dict:
    """Half the pods bound, then the leader SIGKILLed and the other half submitted at once: when does the
    standby decide, and where did the time go?

    The second half arrives while the standby takes over, as work keeps arriving at a live cluster: its
    first cycle places what has been grouped by then, and the rest follows.
    """
    import signal

    client = await Client.connect(system.endpoints)
    conn = await asyncpg.connect(
        system.endpoints.pg_dsn, server_settings={"search_path": schema_for(system.endpoints.prefix)}
    )
    leases = await _lease_reader(system)
    watch = None
    try:
        stage("register nodes")
        await client.register_nodes(fleet(nodes), tag="bench")
        unlimited = QueueResource(quota=-1, over_quota_weight=1, limit=-1)
        await client.apply_queues([QueueSpec(name="bench", resources={"gpu": unlimited})])
        half = pods // 2
        jobs = [job(i) for i in range(pods)]
        for b in range(0, half, SUBMISSION_BATCH):
            await client.submit(
                jobs[b : min(half, b + SUBMISSION_BATCH)], submitted_at=time.time(), uid=f"bench/{b}"
            )
        stage("first half submitted")
        while await _bound(conn) < half:
            await asyncio.sleep(0.2)
        stage("first half bound")
        lease = await _leader(leases, "default")
        elections = lease.epoch  # elections so far: 1 unless the lease changed hands under load
        watch = DecisionWatch(client, "default", lease.epoch + 1)
        await watch.start()
        killed = time.time()
        system.stop_service(f"allocator-{lease.holder}", sig=signal.SIGKILL)
        # What the dead leader last wrote: its lease lapses then, if the standby has not taken it before.
        lapses = (await _leader(leases, "default")).expires
        for b in range(half, pods, SUBMISSION_BATCH):
            await client.submit(jobs[b : b + SUBMISSION_BATCH], submitted_at=time.time(), uid=f"bench/{b}")
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(watch.done.wait(), timeout=ttl + 120)
        stage("first decision")
        while await _bound(conn) < pods and time.time() < killed + max(120.0, pods / 500):
            await asyncio.sleep(0.5)
        all_bound = time.time() - killed
        first, elected = watch.first_bind_at, watch.elected_at
        took = None if first is None else first - killed
        return {
            "name": f"failover, lease ttl {ttl:g} s, {nodes} nodes, {pods} pods",
            "value": None if took is None else round(took, 3),
            "unit": "s kill -> first decision",
            "target": FAILOVER_TARGET_S,
            "met": took is not None and took <= FAILOVER_TARGET_S,
            "nodes": nodes,
            "pods": pods,
            "lease_ttl": ttl,
            # the two parts: the standby seeing the leader gone and recording its election, and the new
            # leader's start (its election read back, pods grouped) and first cycle
            "takeover_s": None if elected is None else round(elected - killed, 3),
            "first_cycle_s": None if first is None or elected is None else round(first - elected, 3),
            # how long the dead leader's lease still ran at the takeover (negative: it had lapsed)
            "lease_left_at_takeover_s": None if elected is None else round(lapses - elected, 3),
            "elections_before_kill": elections,
            "all_bound_s": round(all_bound, 3),
            "bound": await _bound(conn),
        }
    finally:
        if watch is not None:
            await watch.stop()
        await conn.close()
        await client.close()
        await leases.close()


def run_failover(nodes: int, pods: int, ttl: float = FAILOVER_TTL) -> dict:
    """Kill the leader of a pool with work waiting: how long until its standby decides (issue #17's (a))."""
    base = Settings.from_env()
    with tempfile.TemporaryDirectory(prefix="muster-bench-") as home:
        settings = Settings(
            home=Path(home), nats_url=base.nats_url, pg_dsn=base.pg_dsn, prefix=f"bench{uuid.uuid4().hex[:8]}"
        )
        env = {"MUSTER_CYCLE_INTERVAL": "0.02", "MUSTER_LEASE_TTL": str(ttl)}
        services = tuple(s for s in SERVICES if s != "allocator")
        with running_system(settings, services=services, service_env=env) as system:
            for i in (1, 2):
                system.start_service("allocator", key=f"allocator-a{i}", env={"MUSTER_INSTANCE": f"a{i}"})
            return asyncio.run(_failover(system, nodes, pods, ttl))
