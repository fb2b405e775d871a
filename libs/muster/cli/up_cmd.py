"""``muster up``: servers (embedded unless configured) and every service, until Ctrl-C."""

from __future__ import annotations

import argparse
import contextlib
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from muster.cli.common import fail

if TYPE_CHECKING:
    from muster.runtime.settings import Settings
    from muster.runtime.system import System


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "up",
        description="Starts NATS JetStream and Postgres (embedded under MUSTER_HOME unless MUSTER_NATS_URL / "
        "MUSTER_PG_DSN point at running ones) and every muster service, until Ctrl-C. One system per "
        "MUSTER_HOME: on a home another `muster up` or `muster demo` runs in, it exits 2 and touches nothing.",
    )
    p.add_argument("--trace-console", action="store_true", help="print every service's spans to its log")
    p.set_defaults(run=_run)


@contextlib.contextmanager
def own_system(settings: Settings, **options) -> Iterator[System]:
    """``running_system``, or exit 2 naming the home and its holder when another system runs there.

    SIGTERM at any point, start-up included, stops it as Ctrl-C does (``StopRequested``)."""
    from muster.runtime.home_lock import HomeLocked
    from muster.runtime.system import running_system, sigterm_stops

    with sigterm_stops(), contextlib.ExitStack() as stack:
        try:
            system = stack.enter_context(running_system(settings, **options))
        except HomeLocked as exc:
            fail(str(exc))
        yield system


def wait_for_dashboard(home: Path, timeout: float = 10.0) -> str | None:
    """The dashboard's address, once it has written it (None if it did not come up)."""
    path = home / "dashboard.json"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            return json.loads(path.read_text())["url"]
        except (FileNotFoundError, ValueError, KeyError):
            time.sleep(0.1)
    return None


def _run(args: argparse.Namespace) -> int:
    from muster.runtime.settings import Settings
    from muster.runtime.system import StopRequested, wait_until_interrupted

    settings = Settings.from_env()
    env = {"MUSTER_TRACE_CONSOLE": "1"} if args.trace_console else {}
    # A supervisor's SIGTERM is how `up` is meant to end, even before it has said it is up.
    with contextlib.suppress(StopRequested), own_system(settings, service_env=env) as system:
        ep = system.endpoints
        print(f"muster is up (home {settings.home})")
        print(f"  nats      {ep.nats_url}")
        print(f"  postgres  {ep.pg_dsn}")
        print(f"  services  {', '.join(system.processes)}  (logs in {settings.home / 'logs'})")
        dashboard = wait_for_dashboard(settings.home)
        if dashboard:
            print(f"  dashboard {dashboard}")
        print("Ctrl-C to stop.")
        wait_until_interrupted(system)
    print("muster stopped.")
    return 0
