"""``muster demo`` at work: a system of its own, the demo's workload, live progress, and its story.

Imported only when the demo runs, so that ``muster demo --help`` loads nothing heavy.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time

from rich.console import Console
from rich.live import Live
from rich.progress import BarColumn, Progress, TextColumn
from rich.table import Table

from muster.cli.apply_cmd import plan
from muster.cli.demo_home import fresh_demo_settings
from muster.cli.demo_story import DemoTally, example_jobs, story_lines
from muster.cli.queues_cmd import topological
from muster.cli.status_cmd import render
from muster.cli.up_cmd import own_system, wait_for_dashboard
from muster.demo import demo_scenario
from muster.events import QueueRejected
from muster.runtime.settings import Settings
from muster.runtime.system import wait_until_interrupted
from muster.scenario import parse_scenario
from muster.sdk import Client
from muster.store import connect
from muster.store.queries import evictions_by_action, first_eviction, status


def _progress_table(state: dict, submitted: int, total: int, elapsed: float) -> Table:
    counts: dict[str, int] = {}
    for job in state["jobs"].values():
        counts[job["status"]] = counts.get(job["status"], 0) + 1
    gpus_total = sum(n["total"]["gpu"] for n in state["nodes"].values()) or 1.0
    gpus_used = gpus_total - sum(n["free"]["gpu"] for n in state["nodes"].values())
    bars = Progress(
        TextColumn("{task.description:>12}"),
        BarColumn(bar_width=40),
        TextColumn("{task.completed:g}/{task.total:g}"),
    )
    bars.add_task("submitted", total=total, completed=submitted)
    bars.add_task("completed", total=total, completed=counts.get("completed", 0))
    bars.add_task("GPUs in use", total=gpus_total, completed=round(gpus_used, 2))
    table = Table.grid(padding=(0, 2))
    table.add_row(bars)
    table.add_row(
        f"[bold]{elapsed:5.1f}s[/]  pending {counts.get('pending', 0)}  running {counts.get('running', 0)}  "
        f"preempted {counts.get('preempted', 0)}  completed {counts.get('completed', 0)}"
    )
    return table


async def _drive(endpoints, scenario, console: Console, timeout: float, tally: DemoTally) -> dict:
    nodes, queues, jobs = plan(scenario)
    client = await Client.connect(endpoints)
    conn = await connect(endpoints.pg_dsn, endpoints.prefix)
    try:
        await client.register_nodes(nodes, tag="demo")
        answers = await client.apply_queues(topological(queues))
        bad = [f"{n}: {a.error}" for n, a in answers.items() if isinstance(a, QueueRejected)]
        if bad:
            raise RuntimeError("queues rejected: " + "; ".join(bad))
        start = time.time()
        arrivals = sorted(zip((j["spec"]["submitted_at"] for j in jobs), range(len(jobs)), strict=True))
        submitted = 0
        state = await status(conn)
        with Live(_progress_table(state, 0, len(jobs), 0.0), console=console, refresh_per_second=4) as live:
            while time.time() - start < timeout:
                elapsed = time.time() - start
                while submitted < len(arrivals) and arrivals[submitted][0] <= elapsed:
                    job = dict(jobs[arrivals[submitted][1]])
                    job["spec"] = {**job["spec"], "submitted_at": 0.0}
                    await client.submit([job], submitted_at=time.time())
                    submitted += 1
                state = await status(conn)
                tally.observe(state, elapsed)
                live.update(_progress_table(state, submitted, len(jobs), elapsed))
                done = sum(1 for j in state["jobs"].values() if j["status"] == "completed")
                if submitted == len(jobs) and done == len(jobs):
                    break
                await asyncio.sleep(0.25)
        return state
    finally:
        await conn.close()
        await client.close()


async def _evictions(endpoints) -> tuple[dict[str, dict[str, int]], tuple[str, str | None] | None]:
    conn = await connect(endpoints.pg_dsn, endpoints.prefix)
    try:
        return await evictions_by_action(conn), await first_eviction(conn)
    finally:
        await conn.close()


def run(args: argparse.Namespace) -> int:
    """``muster demo`` with its parsed arguments; the exit code."""
    console = Console()
    settings = fresh_demo_settings(Settings.from_env(), time.strftime("%Y%m%d-%H%M%S", time.gmtime()))
    keep = sys.stdout.isatty() if args.keep is None else args.keep
    scenario = parse_scenario(demo_scenario(nodes=args.nodes, jobs=args.jobs))
    console.print(
        f"[bold]muster demo[/]: {args.nodes} nodes x 8 GPUs, {args.jobs} jobs, home {settings.home}",
        soft_wrap=True,
    )
    tally = DemoTally()
    with own_system(settings) as system:
        console.print(f"  nats {system.endpoints.nats_url}   postgres {system.endpoints.pg_dsn}")
        started = time.time()
        state = asyncio.run(_drive(system.endpoints, scenario, console, args.timeout, tally))
        elapsed = time.time() - started
        dead = system.check()
        evictions, first = asyncio.run(_evictions(system.endpoints))
        console.print(render(state))
        counts: dict[str, int] = {}
        for job in state["jobs"].values():
            counts[job["status"]] = counts.get(job["status"], 0) + 1
        console.print(
            f"[bold]summary[/]: {len(state['jobs'])} jobs in {elapsed:.1f}s — "
            + ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
        )
        kept = keep and not dead
        dashboard = wait_for_dashboard(settings.home, timeout=2.0) if kept else None
        for line in story_lines(
            tally, evictions, example_jobs(state, first), home=settings.home, dashboard=dashboard, kept=kept
        ):
            console.print(line, highlight=False, soft_wrap=True)
        if dead:
            console.print(
                f"[red]services that exited during the demo: {', '.join(dead)}[/] (logs in {settings.home / 'logs'})"
            )
            return 1
        if kept:
            wait_until_interrupted(system)
    return 0 if counts.get("completed", 0) == len(state["jobs"]) else 1
