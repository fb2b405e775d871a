"""The whole live path, measured: submit → group → allocate → bind → Postgres.

``run_e2e`` starts a system (embedded servers unless configured, every
service as a process, the simulated fleet), registers ``nodes`` 8-GPU nodes,
submits ``pods`` single-GPU jobs and reports sustained binds per second —
counted as pods confirmed bound *and* visible in Postgres, from the first
submission to the last confirmation — and submit → bound latency. With
``rate``, jobs are offered at that many per second instead of all at once.
"""

from __future__ import annotations

import asyncio
import tempfile
import time
import uuid
from pathlib import Path

import asyncpg

from muster.events import NodeSpec, QueueResource, QueueSpec, Resources
from muster.runtime.settings import Settings
from muster.runtime.system import running_system
from muster.sdk import Client
from muster.store import schema_for
from services.podgrouper.muster_job import manifest

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


def job(i: int, prefix: str = "job") -> dict:
    return manifest(
        {
            "name": f"{prefix}-{i:06d}",
            "queue": "bench",
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


async def _bound(conn: asyncpg.Connection, prefix: str = "") -> int:
    return await conn.fetchval(
        "SELECT count(*) FROM pods WHERE status = 'bound' AND job LIKE $1", prefix + "%"
    )


async def _drive(endpoints, nodes: int, pods: int, rate: float | None, progress) -> dict:
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
        bound = 0
        deadline = submitted + max(120.0, pods / 500)
        while time.time() < deadline:
            bound = await _bound(conn, "job-")
            progress(bound, pods)
            if bound >= pods:
                break
            await asyncio.sleep(0.1)
        finished = time.time()
        latencies = await conn.fetch(
            "SELECT ((e.payload->>'at')::float8 - j.submitted_at) * 1000.0 AS ms FROM events e"
            " JOIN jobs j ON j.name = e.payload->>'job' WHERE e.type = 'PodBound' AND j.name LIKE 'job-%' ORDER BY ms"
        )
        ms = [r["ms"] for r in latencies]
        return {
            "nodes": nodes,
            "pods": pods,
            "bound": bound,
            "binds_per_second": round(bound / (finished - start), 1) if finished > start else 0.0,
            "latency_ms": {"p50": _pct(ms, 0.50), "p99": _pct(ms, 0.99)},
            "offered_rate": rate,
            "submit_seconds": round(submitted - start, 3),
            "total_seconds": round(finished - start, 3),
        }
    finally:
        await conn.close()
        await client.close()


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
            return asyncio.run(_drive(system.endpoints, nodes, pods, rate, progress))


async def _first_decision_after(client, pool: str, epoch: int, timeout: float) -> float | None:
    """Wall time at which the first decision of ``epoch`` was published (seen on the stream)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        async for d in client.bus.read([client.subjects.decisions(pool)]):
            for e in d.events:
                if type(e).__name__ == "BindRequested" and e.epoch >= epoch:
                    return time.time()
        await asyncio.sleep(0.05)
    return None


async def _failover(system, nodes: int, pods: int, ttl: float) -> dict:
    import signal

    client = await Client.connect(system.endpoints)
    conn = await asyncpg.connect(
        system.endpoints.pg_dsn, server_settings={"search_path": schema_for(system.endpoints.prefix)}
    )
    try:
        await client.register_nodes(fleet(nodes), tag="bench")
        unlimited = QueueResource(quota=-1, over_quota_weight=1, limit=-1)
        await client.apply_queues([QueueSpec(name="bench", resources={"gpu": unlimited})])
        half = pods // 2
        jobs = [job(i) for i in range(pods)]
        for b in range(0, half, SUBMISSION_BATCH):
            await client.submit(
                jobs[b : min(half, b + SUBMISSION_BATCH)], submitted_at=time.time(), uid=f"bench/{b}"
            )
        while await _bound(conn) < half:
            await asyncio.sleep(0.2)
        leader = None
        async for d in client.bus.read([client.subjects.decisions("default")]):
            leader = next((e.holder for e in d.events if type(e).__name__ == "LeaderElected"), leader)
        killed = time.time()
        system.stop_service(f"allocator-{leader}", sig=signal.SIGKILL)
        for b in range(half, pods, SUBMISSION_BATCH):
            await client.submit(jobs[b : b + SUBMISSION_BATCH], submitted_at=time.time(), uid=f"bench/{b}")
        first = await _first_decision_after(client, "default", 2, timeout=ttl + 120)
        while await _bound(conn) < pods:
            await asyncio.sleep(0.2)
        took = None if first is None else first - killed
        return {
            "nodes": nodes,
            "pods": pods,
            "lease_ttl": ttl,
            "kill_to_first_decision_s": None if took is None else round(took, 3),
            "beyond_ttl_s": None if took is None else round(took - ttl, 3),
            "all_bound_s": round(time.time() - killed, 3),
        }
    finally:
        await conn.close()
        await client.close()


def run_failover(nodes: int, pods: int, ttl: float = 5.0) -> dict:
    """Kill the leader of a pool mid-run: how long until its standby decides (issue 7's figure)."""
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
