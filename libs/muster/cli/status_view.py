"""``muster status``'s tables: queues with fair-share bars in tree order, jobs, nodes, fitted to the
terminal's width."""

from __future__ import annotations

from rich.console import Console, ConsoleOptions, RenderResult
from rich.table import Table
from rich.text import Text

from muster.cli.columns import Cell, Column, fitted_table
from muster.tolerances import EPS


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


def tree_order(queues: dict[str, dict]) -> list[tuple[str, int]]:
    """Queue names with their depth in the tree, each parent followed at once by its children
    (siblings by name), whatever order ``queues`` is in. A queue whose parent is not among them
    heads a tree of its own; none is left out, even where parents form a loop."""
    children: dict[str | None, list[str]] = {}
    for name in sorted(queues):
        parent = queues[name].get("parent")
        children.setdefault(parent if parent in queues else None, []).append(name)
    order: list[tuple[str, int]] = []
    seen: set[str] = set()
    # Roots first; then whatever a loop of parents kept from being reached, each as a root.
    for root in [*children.get(None, []), *sorted(queues)]:
        stack = [(root, 0)]
        while stack:
            name, depth = stack.pop()
            if name in seen:
                continue
            seen.add(name)
            order.append((name, depth))
            stack += [(child, depth + 1) for child in reversed(children.get(name, []))]
    return order


QUEUE_INDENT = 2
"""Cells a child queue's name is indented by, per level."""


class StatusView:
    """The status tables, laid out for the width of the console that prints them."""

    def __init__(self, state: dict, limit: int | None = 20):
        self.state, self.limit = state, limit

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        state, limit, width = self.state, self.limit, options.max_width
        yield queue_table(state, width)
        items = list(state["jobs"].items())
        yield job_table(items, limit, width)
        if limit is not None and len(items) > limit:
            yield Text(f"… {len(items) - limit} more jobs (--all to list them)", style="dim")
        node_items = list(state["nodes"].items())
        yield node_table(node_items[:limit], width)
        if limit is not None and len(node_items) > limit:
            yield Text(f"… {len(node_items) - limit} more nodes (--all to list them)", style="dim")


def queue_table(state: dict, width: int) -> Table:
    """Queues in tree order, children indented under their parent: GPU allocated beside the fair share,
    the quota (deserved) and the limit ('-': not set), and CPU allocated."""
    cluster_gpus = sum(n["total"]["gpu"] for n in state["nodes"].values())
    queues = state["queues"]
    cols = [
        Column("queue", minimum=6),
        Column("gpu"),
        Column("alloc", justify="right"),
        Column("fair", justify="right"),
        Column("quota", justify="right"),
        Column("limit", justify="right"),
        Column("cpu", justify="right"),
    ]
    rows: list[list[Cell]] = []
    for queue, depth in tree_order(queues):
        q = queues[queue]
        alloc, fair = q["allocated"].get("gpu", 0.0), q["fair_share"].get("gpu")
        rows.append(
            [
                " " * (QUEUE_INDENT * depth) + queue,
                bar(alloc, cluster_gpus, mark=fair),
                _num(alloc),
                _num(fair),
                _num(q.get("quota", {}).get("gpu")),
                _num(q.get("limit", {}).get("gpu")),
                _num(q["allocated"].get("cpu")),
            ]
        )
    return fitted_table("queues (GPU: allocated, │ fair share; quota, limit)", cols, rows, width)


# Failed stands out from preempted: a preempted job will run again, a failed one will not.
_JOB_STYLE = {
    "running": "green",
    "pending": "yellow",
    "preempted": "red",
    "completed": "dim",
    "failed": "bold reverse red",
}


def job_table(items: list[tuple[str, dict]], limit: int | None, width: int) -> Table:
    """The first ``limit`` jobs (None: all) with their queue, status and where they run or why they
    wait, under how many jobs there are in each status."""
    counts: dict[str, int] = {}
    for _, job in items:
        counts[job["status"]] = counts.get(job["status"], 0) + 1
    cols = [
        Column("job", minimum=8),
        Column("queue", minimum=6),
        Column("status"),
        Column("where / why", minimum=30, wrap=True),
    ]
    rows: list[list[Cell]] = []
    for name, job in items[:limit]:
        where = ", ".join(sorted({p["node"] for p in job["pods"]})) if job["pods"] else (job["reason"] or "")
        status = Text(job["status"], style=_JOB_STYLE.get(job["status"], ""))
        # Text, not markup: a failure's reason is a node's own words and may hold brackets.
        rows.append([name, job["queue"], status, Text(where)])
    title = "jobs: " + ", ".join(f"{v} {k}" for k, v in sorted(counts.items()))
    return fitted_table(title, cols, rows, width)


def node_table(items: list[tuple[str, dict]], width: int) -> Table:
    """Nodes with their pool, GPUs in use and what is free."""
    cols = [
        Column("node", minimum=8),
        Column("pool", minimum=6),
        Column("gpu"),
        Column("free", justify="right"),
        Column("cpu free", justify="right"),
    ]
    rows: list[list[Cell]] = []
    for name, n in items:
        used = n["total"]["gpu"] - n["free"]["gpu"]
        rows.append(
            [
                name,
                n["pool"],
                bar(used, n["total"]["gpu"], width=8),
                f"{n['free']['gpu']:g}/{n['total']['gpu']:g}",
                f"{n['free']['cpu']:g}/{n['total']['cpu']:g}",
            ]
        )
    return fitted_table("nodes (GPU in use)", cols, rows, width)
