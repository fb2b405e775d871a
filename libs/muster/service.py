"""What every service process shares: settings, a bus, a stop signal, tracing.

A service is ``async def run(ctx: ServiceContext) -> None``; it returns when
``ctx.stop`` is set. ``service_main`` runs one as a process, stopping it
cleanly on SIGTERM or SIGINT.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from muster import telemetry
from muster.bus import NatsBus
from muster.runtime.settings import Endpoints, Settings

Run = Callable[["ServiceContext"], Awaitable[None]]


@dataclass
class ServiceContext:
    name: str
    settings: Settings
    endpoints: Endpoints
    bus: NatsBus
    stop: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def subjects(self):
        return self.endpoints.subjects


async def run_service(name: str, run: Run, endpoints: Endpoints, settings: Settings, stop: asyncio.Event) -> None:
    """Connect to the bus and run one service until ``stop`` is set."""
    bus = await NatsBus.connect(endpoints.nats_url, endpoints.subjects, service=name)
    try:
        await run(ServiceContext(name=name, settings=settings, endpoints=endpoints, bus=bus, stop=stop))
    finally:
        await bus.close()


def service_main(name: str, run: Run) -> None:
    """Entry point of ``python -m services.<name>``."""
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
        await run_service(name, run, endpoints, settings, stop)

    asyncio.run(main())
