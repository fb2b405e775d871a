"""``muster why JOB``: a job's story from the log — submitted, waited (and why), bound, evicted."""

from __future__ import annotations

import argparse
import asyncio

import msgspec
from rich.console import Console
from rich.table import Table

from muster.cli.common import CHECK_FAILED, fail, print_json, running_endpoints
from muster.store import connect
from muster.store.timeline import Entry, load


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("why", help="why a job is pending or was preempted, from recorded decisions")
    p.add_argument("job", help="the job's name (as `muster status` shows it)")
    p.add_argument("--json", action="store_true", help="print one JSON document")
    p.set_defaults(run=_run)


async def story(job: str) -> tuple[dict | None, list[Entry]]:
    endpoints = running_endpoints()
    conn = await connect(endpoints.reader_dsn, endpoints.prefix)
    try:
        row = await conn.fetchrow(
            "SELECT name, queue, status, reason, submitted_at FROM jobs WHERE name = $1", job
        )
        if row is None:
            return None, []
        return dict(row), await load(conn, job)
    finally:
        await conn.close()


def _since(entry: Entry, start: float | None) -> str:
    # Scheduler clocks where the event has one, else when the projector recorded it.
    when = entry.clock if entry.clock is not None else (entry.at.timestamp() if entry.at else None)
    if when is None or start is None:
        return ""
    return f"+{when - start:.1f}s"


def _run(args: argparse.Namespace) -> int:
    job, entries = asyncio.run(story(args.job))
    if job is None:
        fail(f"no job named {args.job!r} (see `muster status`)", CHECK_FAILED)
    if args.json:
        print_json(
            {
                "job": job["name"],
                "queue": job["queue"],
                "status": job["status"],
                "reason": job["reason"] if job["status"] != "running" else None,
                "timeline": msgspec.to_builtins(entries),
            }
        )
        return 0
    console = Console()
    console.print(f"[bold]{job['name']}[/] in queue {job['queue']}: [bold]{job['status']}[/]")
    if job["status"] in ("pending", "preempted") and job["reason"]:
        console.print(f"  now waiting because: {job['reason']}")
    table = Table(show_header=True, header_style="bold")
    table.add_column("seq", justify="right")
    table.add_column("when", justify="right")
    table.add_column("what happened", overflow="fold")
    for entry in entries:
        table.add_row(str(entry.seq), _since(entry, job["submitted_at"]), entry.text)
    console.print(table)
    return 0
