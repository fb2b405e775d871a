"""A report as PNG files: each queue's GPUs against its deserved share over time, the cluster's
utilisation, and the queues' wait CDFs.

matplotlib is imported here only, when plots are asked for, and draws with its Agg backend (no
display, no global pyplot state).
"""

from __future__ import annotations

import re
from pathlib import Path

from muster.report.model import Report
from muster.report.timeline import StepSeries


def _file_name(name: str, taken: set[str]) -> str:
    """``queue-NAME.png`` with NAME safe on any file system, unique among ``taken``."""
    stem = "queue-" + (re.sub(r"[^A-Za-z0-9._-]", "_", name) or "_")
    candidate, n = stem, 1
    while f"{candidate}.png" in taken:
        n += 1
        candidate = f"{stem}-{n}"
    taken.add(f"{candidate}.png")
    return f"{candidate}.png"


def _steps(series: StepSeries, start: float, end: float) -> tuple[list[float], list[float]]:
    """Seconds since ``start`` and values of a step series, held to ``end``."""
    if not series.times:
        return [0.0, end - start], [0.0, 0.0]
    xs = [t - start for t in series.times] + [end - start]
    return xs, [*series.values, series.values[-1]]


def write_plots(report: Report, folder: str | Path) -> list[Path]:
    """Write the report's plots into ``folder`` (created if need be); the files written."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []

    def save(fig: Figure, name: str) -> None:
        FigureCanvasAgg(fig)
        fig.tight_layout()
        fig.savefig(out / name, dpi=100)
        written.append(out / name)

    start, end = report.start, report.end
    fig = Figure(figsize=(8, 3.5))
    ax = fig.subplots()
    ax.step(*_steps(report.timeline.used, start, end), where="post", label="GPUs used")
    ax.step(*_steps(report.timeline.capacity, start, end), where="post", label="GPUs", linestyle="--")
    ax.set(title="cluster GPUs over time", xlabel="seconds", ylabel="GPUs")
    ax.legend(loc="best")
    save(fig, "utilisation.png")

    taken: set[str] = set()
    deserved = "fair share" if report.deserved_from == "fair_share" else "quota"
    for name in report.queues:
        series = report.timeline.queues.get(name)
        if series is None:
            continue
        fig = Figure(figsize=(8, 3.5))
        ax = fig.subplots()
        ax.step(*_steps(series.used, start, end), where="post", label="allocated")
        ax.step(*_steps(report.deserved_series(name), start, end), where="post", label=deserved)
        if report.deserved_from == "fair_share":
            ax.step(*_steps(series.quota, start, end), where="post", label="quota", linestyle=":")
        ax.set(title=f"queue {name}: GPUs against its {deserved}", xlabel="seconds", ylabel="GPUs")
        ax.legend(loc="best")
        save(fig, _file_name(name, taken))

    fig = Figure(figsize=(8, 4))
    ax = fig.subplots()
    for name, q in report.queues.items():
        if q.waits:
            n = len(q.waits)
            ax.step(q.waits, [(i + 1) / n for i in range(n)], where="post", label=name)
    ax.set(title="wait from submission to first bind (CDF)", xlabel="seconds", ylabel="fraction of jobs")
    if ax.get_legend_handles_labels()[0]:
        ax.legend(loc="lower right")
    save(fig, "wait-cdf.png")
    return written
