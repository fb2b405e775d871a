"""``muster why JOB``: a job's story from the log — submitted, waited (and why), bound, evicted, failed."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from muster.cli.common import CHECK_FAILED, fail, print_json, running_endpoints
from muster.cli.parsing import JOBS, completes

if TYPE_CHECKING:
    from muster.store.timeline import Entry


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("why")
    completes(p.add_argument("job", help="the job's name (as `muster status` shows it)"), JOBS)
    p.add_argument("--json", action="store_true", help="print one JSON document")
    p.set_defaults(run=_run)


async def story(job: str) -> tuple[dict | None, list[Entry], list[str]]:
    """The job's row (with its failed pods under ``failures``) and its timeline, and, when the job is
    unknown, (None, []) and the names of the jobs there are."""
    from muster.cli.recorded import job_names, projection
    from muster.store.queries import failures
    from muster.store.timeline import load

    async with projection(running_endpoints()) as conn:
        row = await conn.fetchrow(
            "SELECT name, queue, status, reason, submitted_at FROM jobs WHERE name = $1", job
        )
        if row is None:
            return None, [], await job_names(conn)
        found = dict(row)
        found["failures"] = (await failures(conn, [job])).get(job, [])
        return found, await load(conn, job), []


def reason_of(job: dict) -> str | None:
    """Why the job is not running: how it failed, or what it waits for; None while it runs."""
    from muster.store.queries import failure_text

    if job["status"] == "failed":
        return failure_text(job["failures"]) or job["reason"]
    return job["reason"] if job["status"] != "running" else None


def headline(job: dict) -> list[str]:
    """The lines above the timeline: the job's status and why, and any pod of it that failed."""
    from rich.markup import escape

    from muster.store.queries import failure_text

    lines = [f"[bold]{escape(job['name'])}[/] in queue {escape(job['queue'])}: [bold]{job['status']}[/]"]
    reason = reason_of(job)
    if job["status"] == "failed":
        lines.append(f"  failed because: {escape(reason or 'a pod failed')}")
    elif job["status"] in ("pending", "preempted") and reason:
        lines.append(f"  now waiting because: {escape(reason)}")
    if job["status"] != "failed" and job["failures"]:
        # A pod failed, but the job still runs or waits to run the rest: worth knowing before the table.
        lines.append(f"  note: {escape(failure_text(job['failures']))}")
    return lines


def _since(entry: Entry, start: float | None) -> str:
    # Scheduler clocks where the event has one, else when the projector recorded it.
    when = entry.clock if entry.clock is not None else (entry.at.timestamp() if entry.at else None)
    if when is None or start is None:
        return ""
    return f"+{when - start:.1f}s"


def _run(args: argparse.Namespace) -> int:
    import asyncio

    job, entries, known = asyncio.run(story(args.job))
    if job is None:
        from muster.cli.suggest import did_you_mean

        fail(f"no job named {args.job!r}{did_you_mean(args.job, known)} (see `muster status`)", CHECK_FAILED)
    if args.json:
        import msgspec

        print_json(
            {
                "job": job["name"],
                "queue": job["queue"],
                "status": job["status"],
                "reason": reason_of(job),
                "failures": job["failures"],
                "timeline": msgspec.to_builtins(entries),
            }
        )
        return 0
    _print_story(job, entries)
    return 0


def _print_story(job: dict, entries: list[Entry]) -> None:
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    console = Console()
    for line in headline(job):
        console.print(line)
    table = Table(show_header=True, header_style="bold")
    table.add_column("seq", justify="right")
    table.add_column("when", justify="right")
    table.add_column("what happened", overflow="fold")
    for entry in entries:
        # Text, not markup: a node's words about a failure may hold brackets.
        table.add_row(str(entry.seq), _since(entry, job["submitted_at"]), Text(entry.text))
    console.print(table)
