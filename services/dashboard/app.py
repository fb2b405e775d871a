"""The dashboard service: serves the page and its JSON API until the service is told to stop.

Settings: ``MUSTER_DASHBOARD_HOST`` (default 127.0.0.1) and
``MUSTER_DASHBOARD_PORT`` (default 8765; 0 picks a free port). Once it
listens, the address it serves is written to ``$MUSTER_HOME/dashboard.json``
(``{"url": ...}``) so ``muster up`` and tests can find it; the file goes
when the service stops.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import socket
from pathlib import Path

import uvicorn
from muster.service import ServiceContext
from muster.store import create_pool

from services.dashboard.api import create_app

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
URL_FILE = "dashboard.json"

log = logging.getLogger(__name__)


class DashboardConfigError(ValueError):
    pass


def listen_address(env: dict[str, str]) -> tuple[str, int]:
    """(host, port) from the MUSTER_DASHBOARD_* settings; a bad port names its variable."""
    host = env.get("MUSTER_DASHBOARD_HOST") or DEFAULT_HOST
    raw = env.get("MUSTER_DASHBOARD_PORT") or str(DEFAULT_PORT)
    try:
        port = int(raw)
    except ValueError:
        raise DashboardConfigError(f"MUSTER_DASHBOARD_PORT: must be a port number, got {raw!r}") from None
    if not 0 <= port <= 65535:
        raise DashboardConfigError(f"MUSTER_DASHBOARD_PORT: must be between 0 and 65535, got {port}")
    if not env.get("MUSTER_DASHBOARD_PORT") and not _free(host, port):
        # Another system (another MUSTER_HOME) has the default: take any free port; `muster up` prints it.
        port = 0
    return host, port


def _free(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        try:
            probe.bind((host, port))
        except OSError:
            return False
    return True


class _Server(uvicorn.Server):
    # The service process owns SIGTERM/SIGINT (service_main sets ctx.stop); uvicorn must not take them.
    @contextlib.contextmanager
    def capture_signals(self):
        yield


def url_of(server: uvicorn.Server, host: str) -> str:
    port = server.servers[0].sockets[0].getsockname()[1]
    shown = "127.0.0.1" if host in ("0.0.0.0", "") else host
    if ":" in shown:
        shown = f"[{shown}]"
    return f"http://{shown}:{port}/"


async def run(ctx: ServiceContext) -> None:
    host, port = listen_address(ctx.settings.extra)
    pool = await create_pool(ctx.endpoints.pg_dsn, ctx.endpoints.prefix, min_size=1, max_size=4)
    url_file: Path = ctx.settings.home / URL_FILE
    try:
        config = uvicorn.Config(
            create_app(pool),
            host=host,
            port=port,
            lifespan="off",
            log_level="warning",
            access_log=False,
            # An open browser tab keeps a connection alive; it must not hold up stopping.
            timeout_graceful_shutdown=2,
        )
        server = _Server(config)
        serving = asyncio.create_task(server.serve())
        while not server.started and not serving.done():
            await asyncio.sleep(0.02)
        if serving.done():
            await serving  # failed to bind: let the error end the service
            raise RuntimeError(f"dashboard could not listen on {host}:{port}")
        url = url_of(server, host)
        ctx.settings.home.mkdir(parents=True, exist_ok=True)
        tmp = url_file.with_suffix(".tmp")
        tmp.write_text(json.dumps({"url": url}))
        ctx.ready.set()
        tmp.replace(url_file)  # readers never see a half-written file
        log.info("dashboard at %s", url)
        stopped = asyncio.create_task(ctx.stop.wait())
        await asyncio.wait({serving, stopped}, return_when=asyncio.FIRST_COMPLETED)
        server.should_exit = True
        stopped.cancel()
        await serving
    finally:
        url_file.unlink(missing_ok=True)
        await pool.close()
