"""``muster status``: queues, jobs and nodes of the running system."""

from __future__ import annotations

import argparse
import time
from typing import TYPE_CHECKING

from muster.cli.common import print_json, running_endpoints

if TYPE_CHECKING:
    from muster.cli.status_view import StatusView


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("status")
    p.add_argument("--json", action="store_true", help="print one JSON document")
    p.add_argument("--watch", action="store_true", help="refresh every second until Ctrl-C")
    p.add_argument(
        "--all", action="store_true", help="list every job and node (default: the first 20 of each)"
    )
    p.set_defaults(run=_run)


async def fetch_status() -> dict:
    from muster.store import connect
    from muster.store.queries import status

    ep = running_endpoints()
    conn = await connect(ep.reader_dsn, ep.prefix)
    try:
        return await status(conn)
    finally:
        await conn.close()


def render(state: dict, limit: int | None = 20) -> StatusView:
    """Queues with fair-share bars, jobs, nodes, fitted to the width of the console they are printed on."""
    from muster.cli.status_view import StatusView

    return StatusView(state, limit)


def _run(args: argparse.Namespace) -> int:
    import asyncio

    if args.json:
        print_json(asyncio.run(fetch_status()))
        return 0
    import shutil

    from rich.console import Console
    from rich.live import Live

    # Fitted to the terminal: names are cut with an ellipsis rather than wrapped.
    console = Console(width=shutil.get_terminal_size().columns)
    limit = None if args.all else 20
    if not args.watch:
        console.print(render(asyncio.run(fetch_status()), limit))
        return 0
    with Live(
        render(asyncio.run(fetch_status()), limit), console=console, refresh_per_second=2, screen=False
    ) as live:
        try:
            while True:
                time.sleep(1.0)
                live.update(render(asyncio.run(fetch_status()), limit))
        except KeyboardInterrupt:
            pass
    return 0
