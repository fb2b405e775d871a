"""``muster status``: queues, jobs and nodes of the running system."""

from __future__ import annotations

import argparse
import asyncio
import time

from rich.console import Console, Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

from muster.cli.common import print_json, running_endpoints
from muster.store import connect
from muster.store.queries import status
from muster.tolerances import EPS


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("status", help="queues, jobs and nodes of the running system")
    p.add_argument("--json", action="store_true", help="print one JSON document")
    p.add_argument("--watch", action="store_true", help="refresh every second until Ctrl-C")
    p.add_argument(
        "--all", action="store_true", help="list every job and node (default: the first 20 of each)"
    )
    p.set_defaults(run=_run)


async def fetch_status() -> dict:
    ep = running_endpoints()
    conn = await connect(ep.reader_dsn, ep.prefix)
    try:
        return await status(conn)
    finally:
        await conn.close()


def _run(args: argparse.Namespace) -> int:
    if args.json:
        print_json(asyncio.run(fetch_status()))
        return 0
    console = Console()
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


def bar(used: float, total: float, width: int = 12, mark: float | None = None) -> Text:
    """A bar of ``used`` out of ``total``; ``mark`` (a fair share) drawn as a tick."""
    text = Text()
    if total <= 0:
        return text.append("·" * width, style="dim")
    filled = min(width, round(width * used / total))
    tick = None if mark is None else min(width - 1, round(width * mark / total))
    for i in range(width):
        if i == tick:
            text.append("│", style="bold yellow")
        elif i < filled:
            text.append("█", style="green" if mark is None or used <= mark + EPS else "red")
        else:
            text.append("░", style="dim")
    return text


def _num(v: float | None) -> str:
    return "-" if v is None else f"{v:g}"


def render(state: dict, limit: int | None = 20) -> Group:
    """Queues with fair-share bars, jobs, nodes: legible in an 80-column terminal."""
    cluster_gpus = sum(n["total"]["gpu"] for n in state["nodes"].values())
    queues = Table(
        title="queues (GPU: allocated, │ fair share)", title_justify="left", expand=False, pad_edge=False
    )
    queues.add_column("queue", overflow="fold", max_width=18)
    queues.add_column("gpu", no_wrap=True)
    queues.add_column("alloc", justify="right")
    queues.add_column("fair", justify="right")
    queues.add_column("cpu", justify="right")
    for name, q in state["queues"].items():
        alloc, fair = q["allocated"].get("gpu", 0.0), q["fair_share"].get("gpu")
        label = f"  {name}" if q.get("parent") else name
        queues.add_row(
            label,
            bar(alloc, cluster_gpus, mark=fair),
            _num(alloc),
            _num(fair),
            _num(q["allocated"].get("cpu")),
        )
    counts: dict[str, int] = {}
    for job in state["jobs"].values():
        counts[job["status"]] = counts.get(job["status"], 0) + 1
    jobs = Table(
        title="jobs: " + ", ".join(f"{v} {k}" for k, v in sorted(counts.items())),
        title_justify="left",
        pad_edge=False,
    )
    jobs.add_column("job", overflow="fold", max_width=20)
    jobs.add_column("queue", overflow="fold", max_width=12)
    jobs.add_column("status", no_wrap=True)
    jobs.add_column("where / why", overflow="fold", max_width=40)
    # Failed stands out from preempted: a preempted job will run again, a failed one will not.
    style = {
        "running": "green",
        "pending": "yellow",
        "preempted": "red",
        "completed": "dim",
        "failed": "bold reverse red",
    }
    items = list(state["jobs"].items())
    for name, job in items[:limit]:
        where = ", ".join(sorted({p["node"] for p in job["pods"]})) if job["pods"] else (job["reason"] or "")
        # Text, not markup: a failure's reason is a node's own words and may hold brackets.
        jobs.add_row(name, job["queue"], Text(job["status"], style=style.get(job["status"], "")), Text(where))
    nodes = Table(title="nodes (GPU in use)", title_justify="left", pad_edge=False)
    nodes.add_column("node", overflow="fold", max_width=18)
    nodes.add_column("pool", max_width=10)
    nodes.add_column("gpu", no_wrap=True)
    nodes.add_column("free", justify="right")
    nodes.add_column("cpu free", justify="right")
    node_items = list(state["nodes"].items())
    for name, n in node_items[:limit]:
        used = n["total"]["gpu"] - n["free"]["gpu"]
        nodes.add_row(
            name,
            n["pool"],
            bar(used, n["total"]["gpu"], width=8),
            f"{n['free']['gpu']:g}/{n['total']['gpu']:g}",
            f"{n['free']['cpu']:g}/{n['total']['cpu']:g}",
        )
    parts: list = [queues, jobs]
    if limit is not None and len(items) > limit:
        parts.append(Text(f"… {len(items) - limit} more jobs (--all to list them)", style="dim"))
    parts.append(nodes)
    if limit is not None and len(node_items) > limit:
        parts.append(Text(f"… {len(node_items) - limit} more nodes (--all to list them)", style="dim"))
    return Group(*parts)
