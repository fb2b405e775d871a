"""The dashboard service: serves the page and its JSON API until the service is told to stop.

Settings: ``MUSTER_DASHBOARD_HOST`` (default 127.0.0.1) and
``MUSTER_DASHBOARD_PORT`` (default 8765; 0 picks a free port).
``MUSTER_DASHBOARD_HOSTS`` (comma-separated) adds host names it answers for
besides its listen address and localhost (a name it is reached by through
DNS, a proxy or an Ingress). Listening beyond loopback, its data takes a
bearer token: ``MUSTER_DASHBOARD_TOKEN`` if set, else one generated once into
``MUSTER_HOME/secrets/dashboard-token`` (mode 0600) and kept for later
starts (``services.dashboard.guard`` says why). Once it listens, the address it serves is written
to ``$MUSTER_HOME/dashboard.json`` (``{"url": ...}``, mode 0600) so ``muster
up`` and tests can find it, with ``#token=...`` when the API takes a token (the
page reads it from there); the file goes when the service stops.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
import socket
from collections.abc import Mapping
from pathlib import Path

import uvicorn
from muster.runtime.security import generate_password, secrets_dir, write_private
from muster.service import ServiceContext
from muster.store import create_pool

from services.dashboard.api import create_app
from services.dashboard.guard import WILDCARD_HOSTS, Guard, GuardMiddleware, host_name, is_loopback

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
URL_FILE = "dashboard.json"
TOKEN_FILE = "dashboard-token"
_HOST = re.compile(r"[a-z0-9]([a-z0-9.-]*[a-z0-9])?|[0-9a-f:.]+")

log = logging.getLogger(__name__)


class DashboardConfigError(ValueError):
    """A dashboard setting that cannot be used; the message names the variable."""


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


def allowed_names(env: Mapping[str, str]) -> list[str]:
    """The names of ``MUSTER_DASHBOARD_HOSTS``; one that is no host name is refused, naming it."""
    names = [host_name(n) for n in env.get("MUSTER_DASHBOARD_HOSTS", "").split(",") if n.strip()]
    for name in names:
        if not _HOST.fullmatch(name):
            raise DashboardConfigError(f"MUSTER_DASHBOARD_HOSTS: {name!r} is not a host name or address")
    return names


def access_token(home: Path, env: Mapping[str, str]) -> str:
    """``MUSTER_DASHBOARD_TOKEN``, else the token kept under ``home`` (made on first need)."""
    given = env.get("MUSTER_DASHBOARD_TOKEN", "").strip()
    if given:
        return given
    path = secrets_dir(home) / TOKEN_FILE
    try:
        kept = path.read_text().strip()
    except FileNotFoundError:
        kept = ""
    if not kept:
        kept = generate_password()
        write_private(path, kept)
    return kept


def guard_for(host: str, env: Mapping[str, str], home: Path) -> Guard:
    """The guard of a dashboard listening on ``host``, from the settings in ``env``."""
    names = allowed_names(env)
    if host_name(host) in WILDCARD_HOSTS:
        names.append(socket.gethostname())  # every address of this machine, so its own name too
    token = None if is_loopback(host) else access_token(home, env)
    return Guard.for_listen(host, names, token)


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
    guard = guard_for(host, ctx.settings.extra, ctx.settings.home)
    pool = await create_pool(ctx.endpoints.pg_dsn, ctx.endpoints.prefix, min_size=1, max_size=4)
    url_file: Path = ctx.settings.home / URL_FILE
    try:
        config = uvicorn.Config(
            GuardMiddleware(create_app(pool), guard),
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
        # In the fragment, the token never travels to a server, a proxy's log or a Referer.
        with_token = f"{url}#token={guard.token}" if guard.token else url
        ctx.ready.set()
        write_private(url_file, json.dumps({"url": with_token}))  # whole or not at all
        if guard.token:
            log.info(
                "dashboard at %s (its token: MUSTER_HOME/secrets/%s, or MUSTER_DASHBOARD_TOKEN)",
                url,
                TOKEN_FILE,
            )
        else:
            log.info("dashboard at %s", url)
        stopped = asyncio.create_task(ctx.stop.wait())
        await asyncio.wait({serving, stopped}, return_when=asyncio.FIRST_COMPLETED)
        server.should_exit = True
        stopped.cancel()
        await serving
    finally:
        url_file.unlink(missing_ok=True)
        await pool.close()
