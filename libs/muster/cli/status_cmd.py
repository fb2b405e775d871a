"""``muster status``: queues, jobs and nodes of the running system."""

from __future__ import annotations

import argparse
import asyncio

from rich.console import Console
from rich.table import Table

from muster.cli.common import print_json, running_endpoints
from muster.store import connect
from muster.store.queries import status


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("status", help="queues, jobs and nodes of the running system")
    p.add_argument("--json", action="store_true", help="print one JSON document")
    p.set_defaults(run=_run)


async def fetch_status() -> dict:
    ep = running_endpoints()
    conn = await connect(ep.pg_dsn, ep.prefix)
    try:
        return await status(conn)
    finally:
        await conn.close()


def _run(args: argparse.Namespace) -> int:
    state = asyncio.run(fetch_status())
    if args.json:
        print_json(state)
        return 0
    render(state, Console())
    return 0


def _fmt(values: dict[str, float], key: str) -> str:
    v = values.get(key)
    return "-" if v is None else f"{v:g}"


def render(state: dict, console: Console) -> None:
    queues = Table(title="queues", title_justify="left")
    for col in ("queue", "parent", "gpu fair", "gpu alloc", "cpu alloc"):
        queues.add_column(col)
    for name, q in state["queues"].items():
        queues.add_row(
            name,
            q["parent"] or "",
            _fmt(q["fair_share"], "gpu"),
            _fmt(q["allocated"], "gpu"),
            _fmt(q["allocated"], "cpu"),
        )
    console.print(queues)
    counts: dict[str, int] = {}
    for job in state["jobs"].values():
        counts[job["status"]] = counts.get(job["status"], 0) + 1
    jobs = Table(
        title="jobs " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())), title_justify="left"
    )
    for col in ("job", "queue", "status", "pods / why"):
        jobs.add_column(col, overflow="fold")
    for name, job in state["jobs"].items():
        where = ", ".join(sorted({p["node"] for p in job["pods"]})) if job["pods"] else (job["reason"] or "")
        jobs.add_row(name, job["queue"], job["status"], where)
    console.print(jobs)
    nodes = Table(title="nodes", title_justify="left")
    for col in ("node", "pool", "gpu free/total", "cpu free/total"):
        nodes.add_column(col)
    for name, n in state["nodes"].items():
        nodes.add_row(
            name,
            n["pool"],
            f"{n['free']['gpu']:g}/{n['total']['gpu']:g}",
            f"{n['free']['cpu']:g}/{n['total']['cpu']:g}",
        )
    console.print(nodes)
