"""A live muster system inside the test's own event loop: the real services, one prefix per system.

Each service runs its composition root (``services.<name>.app.run``) as an
asyncio task, on its own NATS connection, against a stream and a Postgres
schema of its own; the servers are shared. Starting one costs a fraction of
a second instead of a set of processes, so a test can run a whole live
system per scenario file.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import asyncpg
import msgspec
import yaml
from muster.bus import NatsBus
from muster.runtime.settings import Endpoints, Settings
from muster.runtime.system import prepare
from muster.scheduler.config import AllocatorConfig
from muster.service import run_service
from muster.store import connect

from tests.conftest import drop_schema

# What a scenario needs: no agent nodes to watch, no dashboard to serve.
SERVICES = ("projector", "queue_controller", "podgrouper", "allocator", "binder")
CYCLE_INTERVAL = "0.02"
STOP_SECONDS = 0.1


@dataclass
class LiveSystem:
    endpoints: Endpoints
    bus: NatsBus
    """The test's own connection: reading the log, never publishing to it."""
    db: asyncpg.Connection
    """A connection to the system's schema, for what ``muster status`` reads."""
    tasks: dict[str, asyncio.Task] = field(default_factory=dict)

    async def projected(self) -> bool:
        """Whether the projection has caught up with the whole log."""
        done = await self.db.fetchval("SELECT stream_seq FROM checkpoints WHERE consumer = 'projector'")
        return (done or 0) >= await self.bus.last_seq()

    def check(self) -> None:
        """Fail with the errors of the services that stopped on their own.

        Every one is named: a service that fails stops the others, which then end without an error."""
        stopped = {name: task for name, task in self.tasks.items() if task.done()}
        if stopped:
            raise AssertionError(
                "; ".join(
                    f"service {name} stopped: {task.exception() or 'without an error'}"
                    for name, task in stopped.items()
                )
            )


def allocator_settings(config: AllocatorConfig, folder: Path) -> dict[str, str]:
    """The settings an allocator deciding with ``config`` is started with (its configuration file
    written into ``folder``)."""
    path = folder / "allocator.yaml"
    path.write_text(yaml.safe_dump(msgspec.to_builtins(config)))
    return {"MUSTER_ALLOCATOR_CONFIG": str(path), "MUSTER_CYCLE_INTERVAL": CYCLE_INTERVAL}


@contextlib.asynccontextmanager
async def live_system(servers: Endpoints, home: Path, config: AllocatorConfig) -> AsyncIterator[LiveSystem]:
    """Every service a scenario needs, on a fresh stream and schema, until the block ends; then both go."""
    endpoints = Endpoints(
        nats_url=servers.nats_url, pg_dsn=servers.pg_dsn, prefix=f"t{uuid.uuid4().hex[:12]}"
    )
    # Each system's settings are its own, never the process's environment: systems with other
    # configurations may run side by side in one process.
    settings = Settings(
        home=home,
        nats_url=endpoints.nats_url,
        pg_dsn=endpoints.pg_dsn,
        prefix=endpoints.prefix,
        extra=allocator_settings(config, home),
    )
    await prepare(endpoints)
    bus = await NatsBus.connect(endpoints.nats_url, endpoints.subjects, service="test")
    db = await connect(endpoints.pg_dsn, endpoints.prefix)
    stop = asyncio.Event()
    system = LiveSystem(endpoints, bus, db)
    try:
        for name in SERVICES:
            run = importlib.import_module(f"services.{name}.app").run
            system.tasks[name] = asyncio.create_task(run_service(name, run, endpoints, settings, stop))
        await _allocator_started(system)
        yield system
    finally:
        stop.set()
        tasks = list(system.tasks.values())
        # Consumers notice the stop at their next fetch, up to half a second away; the stream goes
        # next anyway, so what has not stopped by then is cancelled (each still closes its connection).
        _, running = await asyncio.wait(tasks, timeout=STOP_SECONDS) if tasks else (set(), set())
        for task in running:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await db.close()
        await _remove(bus, endpoints)


async def _allocator_started(system: LiveSystem) -> None:
    """Wait until the allocator has taken its pool's lease and announced its configuration."""
    subject = system.endpoints.subjects.decisions("*")
    for _ in range(500):
        system.check()
        async for delivery in system.bus.read([subject]):
            if delivery.events:
                return
        await asyncio.sleep(0.01)
    raise AssertionError("the allocator announced no configuration within 5 s")


async def _remove(bus: NatsBus, endpoints: Endpoints) -> None:
    """Delete the system's stream, lease bucket and schema: nothing of it outlives the test."""
    stream = endpoints.subjects.stream
    try:
        for name in (stream, f"KV_{stream}_LEASES"):
            with contextlib.suppress(Exception):
                await bus.js.delete_stream(name)
    finally:
        await bus.close()
    await drop_schema(endpoints)
