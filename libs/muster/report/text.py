"""A report as text: a headline, then per queue its waits and its GPU-hours, in aligned columns."""

from __future__ import annotations

from collections.abc import Callable

from muster.report.model import QueueFigures, Report

DESERVED_WORDS = {
    "fair_share": "deserved = the allocator's fair share (QueueStatus)",
    "quota": "deserved = the GPU quota (no fair share in the log)",
}


def _n(x: float | None, digits: int = 1) -> str:
    return "-" if x is None else f"{x:,.{digits}f}"


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def columns(rows: list[list[str]], left: int = 1) -> list[str]:
    """``rows`` (the first one the header) aligned: the first ``left`` columns to the left (names), the
    others to the right (figures)."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return [
        "  ".join(
            cell.ljust(w) if i < left else cell.rjust(w)
            for i, (cell, w) in enumerate(zip(row, widths, strict=True))
        ).rstrip()
        for row in rows
    ]


def headline(report: Report) -> list[str]:
    c = report.cluster
    return [
        f"report over {report.seconds:,.1f} s: {c.jobs} jobs, {c.started} started, {c.completed} completed, "
        f"{c.failed} failed",
        f"cluster: {c.gpus:g} GPUs, utilisation {_pct(c.utilisation())} (mean), makespan "
        f"{_n(c.makespan)} s, Jain's index {_n(c.jain_index, 3)} (leaf queues' used / deserved), "
        f"{c.evictions} evictions losing {_n(c.evicted_gpu_seconds / 3600, 3)} GPU-h",
        f"waits: mean {_n(c.wait.mean)} s, p50 {_n(c.wait.p50)} s, p99 {_n(c.wait.p99)} s; "
        + DESERVED_WORDS[report.deserved_from],
    ]


def _name(report: Report, name: str) -> str:
    return "  " * report.depth.get(name, 0) + name


def wait_table(report: Report) -> list[str]:
    rows = [
        ["queue", "jobs", "started", "done", "wait mean s", "p50", "p99", "done mean s", "multi-node wait s"]
    ]
    for name, q in report.queues.items():
        rows.append(
            [
                _name(report, name),
                str(q.jobs),
                str(q.started),
                str(q.completed),
                _n(q.wait.mean),
                _n(q.wait.p50),
                _n(q.wait.p99),
                _n(q.completion.mean),
                _n(q.multi_node_wait.mean),
            ]
        )
    return columns(rows)


def share_table(report: Report) -> list[str]:
    rows = [
        [
            "queue",
            "GPU-h used",
            "deserved",
            "quota",
            "borrowed",
            "lent",
            "starved s",
            "evictions",
            "lost GPU-h",
        ]
    ]
    for name, q in report.queues.items():
        rows.append(
            [
                _name(report, name),
                _n(q.used_gpu_seconds / 3600, 3),
                _n(q.deserved_gpu_seconds / 3600, 3),
                _n(q.quota_gpu_seconds / 3600, 3),
                _n(q.borrowed_gpu_seconds / 3600, 3),
                _n(q.lent_gpu_seconds / 3600, 3),
                _n(q.below_quota_seconds),
                str(q.evictions),
                _n(q.evicted_gpu_seconds / 3600, 3),
            ]
        )
    return columns(rows)


def report_lines(report: Report) -> list[str]:
    """The whole report as text ("starved": below its quota while a job of it waited for a GPU)."""
    lines = [*headline(report), "", *wait_table(report), "", *share_table(report)]
    if report.notes:
        lines += ["", *(f"note: {note}" for note in report.notes)]
    return lines


FIGURES: list[tuple[str, Callable[[QueueFigures], float | None], int]] = [
    ("jobs started", lambda q: q.started, 0),
    ("wait mean s", lambda q: q.wait.mean, 1),
    ("wait p99 s", lambda q: q.wait.p99, 1),
    ("done mean s", lambda q: q.completion.mean, 1),
    ("multi-node wait s", lambda q: q.multi_node_wait.mean, 1),
    ("GPU-h used", lambda q: q.used_gpu_seconds / 3600, 3),
    ("GPU-h deserved", lambda q: q.deserved_gpu_seconds / 3600, 3),
    ("starved s", lambda q: q.below_quota_seconds, 1),
    ("GPU-h borrowed", lambda q: q.borrowed_gpu_seconds / 3600, 3),
    ("GPU-h lent", lambda q: q.lent_gpu_seconds / 3600, 3),
    ("evictions", lambda q: q.evictions, 0),
    ("GPU-h lost", lambda q: q.evicted_gpu_seconds / 3600, 3),
]
"""The per-queue figures the what-if sets side by side: label, value, digits."""


def side_by_side(before: Report, after: Report) -> list[str]:
    """Each queue's figures in the baseline re-run and in the what-if, and the change."""
    rows = [["queue", "figure", "before", "after", "change"]]
    for name in [*before.queues, *(n for n in after.queues if n not in before.queues)]:
        b, a = before.queues.get(name), after.queues.get(name)
        for i, (label, value, digits) in enumerate(FIGURES):
            x = value(b) if b is not None else None
            y = value(a) if a is not None else None
            change = "-" if x is None or y is None else f"{round(y - x, digits) + 0.0:+,.{digits}f}"
            rows.append([name if i == 0 else "", label, _n(x, digits), _n(y, digits), change])
    cb, ca = before.cluster, after.cluster
    rows.append(["cluster", "utilisation", _pct(cb.utilisation()), _pct(ca.utilisation()), ""])
    rows.append(["", "makespan s", _n(cb.makespan), _n(ca.makespan), ""])
    rows.append(["", "Jain's index", _n(cb.jain_index, 3), _n(ca.jain_index, 3), ""])
    lines = columns(rows, left=2)
    return ["per-queue figures of the two re-runs (--report), each over its whole run:", *lines]
