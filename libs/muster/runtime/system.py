"""A whole muster system: servers (embedded or given) and every service process.

``muster up``, ``muster demo``, the end-to-end tests and the e2e benchmark
all start a system the same way.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from muster.runtime.embedded import die_with_parent, embedded_servers
from muster.runtime.settings import Endpoints, Settings, clear_endpoints, write_endpoints

SERVICES = ("projector", "queue_controller", "podgrouper", "allocator", "binder", "nodewatch", "dashboard")


@dataclass
class ServiceProcess:
    name: str
    proc: subprocess.Popen
    log: Path

    def alive(self) -> bool:
        return self.proc.poll() is None


@dataclass
class System:
    settings: Settings
    endpoints: Endpoints
    processes: dict[str, ServiceProcess] = field(default_factory=dict)
    service_env: dict[str, str] = field(default_factory=dict)

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        # Each service serves /healthz, /readyz, /metrics on a free port, recorded under home/http/.
        env.setdefault("MUSTER_HTTP_PORT", "0")
        env.update(self.service_env)
        env.update(
            MUSTER_HOME=str(self.settings.home),
            MUSTER_NATS_URL=self.endpoints.nats_url,
            MUSTER_PG_DSN=self.endpoints.pg_dsn,
            MUSTER_PREFIX=self.endpoints.prefix,
        )
        return env

    def start_service(
        self, name: str, *, key: str | None = None, env: dict[str, str] | None = None
    ) -> ServiceProcess:
        """Start ``services.<name>`` as a process; ``key`` names it when several run (allocators per pool)."""
        key = key or name
        logs = self.settings.home / "logs"
        logs.mkdir(parents=True, exist_ok=True)
        log = logs / f"{key}.log"
        with open(log, "ab") as out:
            proc = subprocess.Popen(
                [sys.executable, "-m", f"services.{name}"],
                env={**self.env(), **(env or {})},
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                preexec_fn=die_with_parent,
            )
        self.processes[key] = ServiceProcess(key, proc, log)
        return self.processes[key]

    def stop_service(self, name: str, sig: int = signal.SIGTERM, timeout: float = 10.0) -> None:
        service = self.processes.pop(name, None)
        if service is None or not service.alive():
            return
        service.proc.send_signal(sig)
        try:
            service.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            service.proc.kill()
            service.proc.wait(5)

    def check(self) -> list[str]:
        """Names of services that have exited on their own."""
        return [name for name, p in self.processes.items() if not p.alive()]

    def stop_all(self) -> None:
        for name in reversed(list(self.processes)):
            self.stop_service(name)


async def prepare(endpoints: Endpoints) -> None:
    """Create the stream and the schema before any service starts, so none races another."""
    from muster.bus import NatsBus
    from muster.store import connect

    bus = await NatsBus.connect(endpoints.nats_url, endpoints.subjects, service="muster-up")
    await bus.close()
    conn = await connect(endpoints.pg_dsn, endpoints.prefix)
    await conn.close()


@contextlib.contextmanager
def running_system(
    settings: Settings,
    services: tuple[str, ...] = SERVICES,
    service_env: dict[str, str] | None = None,
) -> Iterator[System]:
    """Servers (embedded unless configured) plus the given services, until the block ends."""
    settings.home.mkdir(parents=True, exist_ok=True)
    with embedded_servers(settings.home, nats=not settings.nats_url, postgres=not settings.pg_dsn) as (
        nats_url,
        pg_dsn,
    ):
        endpoints = Endpoints(
            nats_url=settings.nats_url or nats_url or "",
            pg_dsn=settings.pg_dsn or pg_dsn or "",
            prefix=settings.prefix,
        )
        asyncio.run(prepare(endpoints))
        write_endpoints(settings.home, endpoints)
        system = System(settings, endpoints, service_env=dict(service_env or {}))
        try:
            for name in services:
                system.start_service(name)
            yield system
        finally:
            system.stop_all()
            clear_endpoints(settings.home)


def wait_until_interrupted(system: System, poll: float = 0.5) -> None:
    """Block until Ctrl-C or SIGTERM; restart nothing, but report services that died."""
    stopping = False

    def _stop(*_):
        nonlocal stopping
        stopping = True

    previous = signal.signal(signal.SIGTERM, _stop)
    try:
        while not stopping:
            dead = system.check()
            for name in dead:
                print(f"service {name} exited; see {system.processes[name].log}", file=sys.stderr)
                system.processes.pop(name)
            time.sleep(poll)
    except KeyboardInterrupt:
        pass
    finally:
        signal.signal(signal.SIGTERM, previous)
