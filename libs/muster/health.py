"""Every service's HTTP face: ``/healthz``, ``/readyz`` and Prometheus ``/metrics``.

Served on ``MUSTER_HTTP_PORT`` when it is set (Kubernetes and compose set
8080; ``muster up`` gives each service a free port and records it under
``MUSTER_HOME/http/``). A tiny asyncio server: probes must answer even
when the service is busy, and they need nothing more.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from pathlib import Path

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)


class Metrics:
    """The figures issue 7 asks every deployment to see, in one registry per process."""

    def __init__(self, service: str) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.events = Counter("muster_events_total", "Events this service has read", ["service"], registry=r)
        self.lag = Gauge(
            "muster_consumer_lag", "Stream messages not yet read by this service", ["service"], registry=r
        )
        self.cycle_seconds = Histogram(
            "muster_cycle_seconds",
            "Allocator cycle duration",
            ["pool"],
            buckets=(0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
            registry=r,
        )
        self.decisions = Counter(
            "muster_decisions_total", "Binds and evictions decided", ["pool", "kind"], registry=r
        )
        self.pending_jobs = Gauge("muster_pending_jobs", "Jobs waiting to be placed", ["pool"], registry=r)
        self.fair_share = Gauge(
            "muster_queue_fair_share", "Queue fair share", ["queue", "resource"], registry=r
        )
        self.allocated = Gauge(
            "muster_queue_allocated", "Queue allocation", ["queue", "resource"], registry=r
        )
        self.leader = Gauge(
            "muster_leader", "1 while this allocator holds its pool's lease", ["pool"], registry=r
        )
        self.binds_rejected = Counter(
            "muster_binds_rejected_total", "Binds the binder refused for a stale epoch", ["pool"], registry=r
        )
        self.service = service

    def render(self) -> bytes:
        return generate_latest(self.registry)


class HealthServer:
    def __init__(self, metrics: Metrics, ready: asyncio.Event, alive: asyncio.Event | None = None) -> None:
        self.metrics = metrics
        self.ready = ready
        self.alive = alive
        self.server: asyncio.base_events.Server | None = None
        self.port = 0

    async def start(self, host: str, port: int) -> int:
        self.server = await asyncio.start_server(self._serve, host, port)
        self.port = self.server.sockets[0].getsockname()[1]
        return self.port

    async def stop(self) -> None:
        if self.server is not None:
            self.server.close()
            with contextlib.suppress(Exception):
                await self.server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            request = await asyncio.wait_for(reader.readline(), 5)
            while (await asyncio.wait_for(reader.readline(), 5)) not in (b"\r\n", b"\n", b""):
                pass
            parts = request.decode("latin-1").split()
            path = parts[1].split("?", 1)[0] if len(parts) >= 2 else ""
            status, body, kind = self._answer(path)
            head = f"HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n"
            writer.write(head.encode() + body)
            await writer.drain()
        except (TimeoutError, ConnectionError):
            pass
        finally:
            writer.close()

    def _answer(self, path: str) -> tuple[str, bytes, str]:
        if path == "/healthz":
            return "200 OK", b"ok\n", "text/plain"
        if path == "/readyz":
            if self.ready.is_set():
                return "200 OK", b"ready\n", "text/plain"
            return "503 Service Unavailable", b"starting\n", "text/plain"
        if path == "/metrics":
            return "200 OK", self.metrics.render(), CONTENT_TYPE_LATEST
        return "404 Not Found", b"not found\n", "text/plain"


def record_port(home: Path, service: str, port: int) -> None:
    """Where ``muster up`` users (and tests) find each service's HTTP port."""
    folder = home / "http"
    folder.mkdir(parents=True, exist_ok=True)
    # Written aside and renamed into place: a reader never finds the file there but still empty.
    target = folder / f"{service}.json"
    partial = folder / f".{service}.json.{os.getpid()}"
    partial.write_text(json.dumps({"url": f"http://127.0.0.1:{port}"}))
    partial.replace(target)
