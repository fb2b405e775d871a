"""What every service process shares: settings, a bus, a stop signal, tracing.

A service is ``async def run(ctx: ServiceContext) -> None``; it returns when
``ctx.stop`` is set. ``service_main`` runs one as a process, stopping it
cleanly on SIGTERM or SIGINT.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

from muster import telemetry
from muster.bus import NatsBus
from muster.health import HealthServer, Metrics, record_port
from muster.heap import keep_survivors_frozen, tune_garbage_collector
from muster.runtime.settings import Endpoints, Settings

Run = Callable[["ServiceContext"], Awaitable[None]]


@dataclass
class ServiceContext:
    name: str
    settings: Settings
    endpoints: Endpoints
    bus: NatsBus
    stop: asyncio.Event = field(default_factory=asyncio.Event)
    metrics: Metrics | None = None
    ready: asyncio.Event = field(default_factory=asyncio.Event)
    """What /readyz reports: run_service ties it to the consumer reading the stream;
    a service that consumes nothing (the dashboard) sets it when it serves."""

    @property
    def subjects(self):
        return self.endpoints.subjects


async def run_service(
    name: str, run: Run, endpoints: Endpoints, settings: Settings, stop: asyncio.Event
) -> None:
    """Connect to the bus and run one service until ``stop`` is set.

    With ``MUSTER_HTTP_PORT`` set, ``/healthz``, ``/readyz`` (ready once the
    service's consumer reads the stream) and ``/metrics`` are served too.
    """
    metrics = Metrics(name)
    bus = await NatsBus.connect(endpoints.nats_url, endpoints.subjects, service=name)
    bus.metrics = metrics
    health = None
    port = settings.extra.get("MUSTER_HTTP_PORT")
    if port is not None:
        health = HealthServer(metrics, bus.consuming)
        bound = await health.start(settings.extra.get("MUSTER_HTTP_HOST", "127.0.0.1"), int(port))
        record_port(settings.home, name, bound)
    try:
        await run(
            ServiceContext(
                name=name,
                settings=settings,
                endpoints=endpoints,
                bus=bus,
                stop=stop,
                metrics=metrics,
                ready=bus.consuming,
            )
        )
    finally:
        if health is not None:
            await health.stop()
        await bus.close()


def service_main(name: str, run: Run) -> None:
    """Entry point of ``python -m services.<name>``."""
    tune_garbage_collector()
    logging.basicConfig(level=logging.INFO, format=f"%(asctime)s {name} %(levelname)s %(message)s")
    settings = Settings.from_env()
    endpoints = settings.endpoints()
    telemetry.configure(f"muster-{name}")

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(NotImplementedError):
                loop.add_signal_handler(sig, stop.set)
        # Only a service's own process freezes its heap: run in a test's process, it would freeze
        # the test run's garbage too.
        freezing = asyncio.ensure_future(keep_survivors_frozen())
        try:
            await run_service(name, run, endpoints, settings, stop)
        finally:
            freezing.cancel()

    profile_dir = settings.extra.get("MUSTER_PROFILE")
    if not profile_dir:
        asyncio.run(main())
        return
    # Opt-in, for finding where a service spends its CPU: cProfile stats written on a clean exit.
    import cProfile

    profiler = cProfile.Profile()
    try:
        profiler.runcall(asyncio.run, main())
    finally:
        Path(profile_dir).mkdir(parents=True, exist_ok=True)
        profiler.dump_stats(str(Path(profile_dir) / f"{name}-{os.getpid()}.prof"))


async def rebuild_then_consume(
    ctx: ServiceContext,
    consumer: str,
    subjects: list[str],
    handle: Callable[[list, bool], Awaitable[None]],
    *,
    batch: int = 512,
    on_rebuilt: Callable[[], Awaitable[None]] | None = None,
    start_seq: int = 1,
) -> None:
    """For services whose state is a fold of the log: rebuild it from the stream, then follow.

    ``handle(deliveries, live)`` sees every message on ``subjects`` exactly once
    per process, in stream order: first the history (``live=False``), then, after
    ``on_rebuilt()``, new messages (``live=True``). See ``NatsBus.fold``; messages
    readers refuse (``muster.bus.admission``) never reach ``handle`` and are
    dead-lettered under ``consumer``, once. A state restored from a snapshot folds on from
    ``start_seq``, the message after it.
    """
    await ctx.bus.fold(
        consumer, subjects, handle, stop=ctx.stop, batch=batch, on_caught_up=on_rebuilt, start_seq=start_seq
    )
