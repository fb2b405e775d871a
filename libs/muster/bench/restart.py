"""Issue #17's history-length targets: a cold restart, and a window replay, cost the same at any length.

For each history length, a simulated history (``muster.bench.history``) is
written into a stream of its own, and a real allocator process folds it,
taking snapshots as it goes. Then:

- **cold restart**: the allocator is killed (SIGKILL), a node and a job that
  fits only on it are logged, and a new allocator process is started; the
  figure is the time from starting the process to its bind of that job on
  the stream. Measured with the snapshots, and once without (a bucket of
  its own with none in it) for comparison: that is what the history costs.
- **window replay**: ``read_window`` + ``replay`` of the cycles in 1,000
  sequences from the middle of the history, in process, as ``muster replay
  --from --to`` runs them.

Targets: restart ≤ ``RESTART_TARGET`` s and window ≤ ``WINDOW_TARGET`` s at
every length, flat in history length.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

from muster import events as ev
from muster.bench.history import HistoryInfo, delete_history, write_history
from muster.bus.nats import NatsBus
from muster.replay import LoggedMessage, replay
from muster.replay_window import StreamLog, read_window
from muster.runtime.settings import Endpoints, Settings
from muster.snapshots import ObjectStoreSnapshots

RESTART_TARGET = 3.0
WINDOW_TARGET = 2.0
WINDOW = 1_000
SNAPSHOT_EVERY = 2_000
"""Messages between snapshots in the benchmark: the tail a restart folds is at most this long."""
FULL_SIZES = (100_000, 300_000, 1_000_000)
QUICK_SIZES = (5_000, 20_000)
RESTART_NODE = "bench-restart-node"
POLL = 0.02


def _allocator(
    endpoints: Endpoints, info: HistoryInfo, home: Path, config: Path, **env: str
) -> subprocess.Popen:
    environment = {
        **{k: v for k, v in os.environ.items() if not k.startswith("MUSTER_")},
        "MUSTER_NATS_URL": endpoints.nats_url,
        # The allocator reads no database; the setting only has to name one.
        "MUSTER_PG_DSN": endpoints.pg_dsn or "postgresql://127.0.0.1/unused",
        "MUSTER_PREFIX": info.prefix,
        "MUSTER_HOME": str(home),
        "MUSTER_INSTANCE": "bench",
        "MUSTER_ALLOCATOR_CONFIG": str(config),
        "MUSTER_SNAPSHOT_EVERY": str(SNAPSHOT_EVERY),
        "MUSTER_SNAPSHOT_MIN_INTERVAL": "0",
        "MUSTER_CYCLE_INTERVAL": "0.02",
        **env,
    }
    log = open(home / f"allocator-{time.monotonic_ns()}.log", "ab")  # noqa: SIM115 — the child owns it
    return subprocess.Popen(
        [sys.executable, "-m", "services.allocator"], env=environment, stdout=log, stderr=subprocess.STDOUT
    )


def _config_of(log: list[LoggedMessage]) -> dict:
    """The configuration the history's allocator decided with (it announced it): the restarted one
    decides with the same, so its snapshots serve replays of the history's cycles."""
    for message in log:
        for event in message.events:
            if isinstance(event, ev.AllocatorConfigured):
                return event.config
    raise ValueError("the history does not announce its allocator's configuration")


async def _wait_for(bus: NatsBus, start: int, found, timeout: float = 120.0) -> tuple[int, float]:
    """The first message from ``start`` on whose events satisfy ``found``: its sequence, and when it was
    seen (within ``POLL`` of its publication)."""
    deadline = time.monotonic() + timeout
    seq = start
    while time.monotonic() < deadline:
        async for delivery in bus.read(start_seq=seq):
            seq = delivery.seq + 1
            if any(found(e) for e in delivery.events):
                return delivery.seq, time.time()
        await asyncio.sleep(POLL)
    raise TimeoutError("the allocator did not decide in time")


async def _snapshotted(bus: NatsBus, last: int, timeout: float = 900.0) -> int:
    """Wait until the allocator has read the history (it was elected after it) and has a snapshot
    within ``SNAPSHOT_EVERY`` of its end (none for a history shorter than that)."""
    await _wait_for(bus, last + 1, lambda e: isinstance(e, ev.LeaderElected), timeout)
    store = await ObjectStoreSnapshots.open(bus.js, bus.subjects.stream)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        newest = max((m.seq for m in await store.list()), default=0)
        if newest >= last - SNAPSHOT_EVERY:
            return newest
        await asyncio.sleep(0.5)
    raise TimeoutError("the allocator took no snapshot near the end of the history")


def _restart_job(queue: str, name: str) -> list[ev.Event]:
    node = ev.NodeSpec(
        name=RESTART_NODE,
        labels={"bench": "restart"},
        resources=ev.Resources(gpu=8, cpu=64_000, memory=2**38),
    )
    job = ev.PodGroupCreated(
        name=name,
        queue=queue,
        pods=[ev.PodSpec(resources=ev.Resources(gpu=1, cpu=1000), node_selector={"bench": "restart"})],
        submitted_at=time.time(),
    )
    return [ev.NodeRegistered(node=node), job]


async def _cold_restart(
    endpoints: Endpoints, info: HistoryInfo, home: Path, config: Path, queue: str, **env
) -> dict:
    bus = await NatsBus.connect(endpoints.nats_url, info.subjects, service="bench-restart")
    try:
        name = f"restart-{time.monotonic_ns()}"
        node, job = _restart_job(queue, name)
        await bus.publish(info.subjects.nodes("default"), [node], msg_id=f"{name}:node")
        mark = await bus.publish(info.subjects.podgroups, [job], msg_id=f"{name}:job")
        started = time.time()
        proc = _allocator(endpoints, info, home, config, **env)
        try:
            _, bound_at = await _wait_for(
                bus, mark, lambda e: isinstance(e, ev.BindRequested) and e.job == name
            )
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
        return {"seconds": round(bound_at - started, 3)}
    finally:
        await bus.close()


async def _window(endpoints: Endpoints, info: HistoryInfo) -> dict:
    bus = await NatsBus.connect(endpoints.nats_url, info.subjects, service="bench-window")
    try:
        store = await ObjectStoreSnapshots.open(bus.js, info.stream)
        low = info.messages // 2
        started = time.perf_counter()
        window = await read_window(StreamLog(bus), store, info.subjects, low, low + WINDOW - 1)
        read = time.perf_counter() - started
        report = replay(
            window.messages,
            info.subjects,
            from_seq=low,
            to_seq=low + WINDOW - 1,
            starts=window.starts,
            check=window.check,
        )
        return {
            "seconds": round(time.perf_counter() - started, 3),
            "read_seconds": round(read, 3),
            "messages_read": len(window.messages),
            "cycles": report.cycles,
            "divergences": report.divergences,
            "started_from": report.started_from,
            "snapshots_checked": report.snapshots_checked,
            "snapshot_mismatches": len(report.snapshot_mismatches),
        }
    finally:
        await bus.close()


async def _measure(endpoints: Endpoints, events_target: int, home: Path) -> list[dict]:
    from muster.bench.history import history_of

    log = await asyncio.to_thread(history_of, events_target)
    config = home / "allocator.yaml"
    config.write_text(yaml.safe_dump(_config_of(log)))
    # A queue the history's jobs ran in: a leaf, so it can hold the restart's job.
    queue = next(e.queue for m in log for e in m.events if isinstance(e, ev.PodGroupCreated))
    info = await write_history(endpoints, events_target, log=log)
    try:
        # A first allocator folds the whole history and snapshots it as it goes, then dies.
        bus = await NatsBus.connect(endpoints.nats_url, info.subjects, service="bench-restart")
        try:
            first = _allocator(endpoints, info, home, config)
            try:
                await _snapshotted(bus, info.messages)
            finally:
                first.send_signal(signal.SIGKILL)
                first.wait()
        finally:
            await bus.close()
        with_snapshots = await _cold_restart(endpoints, info, home, config, queue)
        without = await _cold_restart(endpoints, info, home, config, queue, MUSTER_SNAPSHOTS="off")
        window = await _window(endpoints, info)
    finally:
        with contextlib.suppress(Exception):
            await delete_history(endpoints, info)
            await _delete_snapshots(endpoints, info)
    label = f"{info.events} events ({info.messages} messages)"
    return [
        {
            "name": f"cold restart to first decision, {label}, from a snapshot",
            "value": with_snapshots["seconds"],
            "unit": "s",
            "target": RESTART_TARGET,
            "met": with_snapshots["seconds"] <= RESTART_TARGET,
            "events": info.events,
            "without_snapshots_s": without["seconds"],
        },
        {
            "name": f"replay of a {WINDOW}-sequence window, {label}",
            "value": window["seconds"],
            "unit": "s",
            "target": WINDOW_TARGET,
            "met": window["seconds"] <= WINDOW_TARGET and window["divergences"] == 0,
            "events": info.events,
            **{k: v for k, v in window.items() if k != "seconds"},
        },
    ]


async def _delete_snapshots(endpoints: Endpoints, info: HistoryInfo) -> None:
    bus = await NatsBus.connect(endpoints.nats_url, info.subjects, service="bench-restart")
    try:
        with contextlib.suppress(Exception):
            await bus.js.delete_object_store(f"{info.stream}_SNAPSHOTS")
        with contextlib.suppress(Exception):
            await bus.js.delete_key_value(f"{info.stream}_LEASES")
    finally:
        await bus.close()


def run(quick: bool = False, sizes: tuple[int, ...] | None = None) -> list[dict]:
    """Both figures at each history length, against the configured NATS or an embedded one of its own."""
    from muster.runtime.embedded import embedded_servers

    sizes = sizes or (QUICK_SIZES if quick else FULL_SIZES)
    base = Settings.from_env()
    rows: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="muster-bench-") as home:
        if base.nats_url:
            endpoints = Endpoints(nats_url=base.nats_url, pg_dsn=base.pg_dsn or "")
            for size in sizes:
                rows += asyncio.run(_measure(endpoints, size, Path(home)))
            return rows
        with embedded_servers(Path(home), nats=True, postgres=False) as (nats_url, _):
            for size in sizes:
                rows += asyncio.run(_measure(Endpoints(nats_url=nats_url, pg_dsn=""), size, Path(home)))
    return rows
