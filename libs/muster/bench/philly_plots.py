"""``muster bench philly``'s plots: the policies side by side, as PNG files.

Per load, the policies' wait CDFs (every job that started) and their GPUs in use over time; and one
summary of the headline figures of every (policy, load) row. Every value drawn is one ``muster
report`` computed (the rows, the reports' waits and timelines). matplotlib is imported only here, when
plots are written, and draws with its Agg backend.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from muster.bench.philly_outcomes import Outcome
from muster.report import Report

LINES = ("-", "--", "-.", ":")
"""A line style per policy, in order: policies that decide alike draw on top of each other, and the dashes
show both."""
SUMMARY = (
    ("wait_mean_s", "mean wait, s"),
    ("wait_p99_s", "p99 wait, s"),
    ("quota_violation_s", "below quota with work pending, s (summed)"),
    ("utilisation", "utilisation (over each run's window)"),
    ("gpu_hours_lost_to_eviction", "GPU-hours lost to eviction"),
    ("borrowed_gpu_hours", "GPU-hours borrowed beyond quota"),
)


def all_waits(report: Report) -> list[float]:
    """The waits of every job that started, sorted: the leaf queues' waits put together (each job is in
    one leaf queue)."""
    leaves = [
        q for name, q in report.queues.items() if not any(o.parent == name for o in report.queues.values())
    ]
    return sorted(w for q in leaves for w in q.waits)


def write_plots(outcomes: Sequence[Outcome], folder: Path, stem: str) -> list[Path]:
    """Write the plots of ``outcomes`` into ``folder`` as ``philly-STEM-*.png``; the files written."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    folder.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []

    def save(fig: Figure, name: str) -> None:
        FigureCanvasAgg(fig)
        fig.tight_layout()
        path = folder / f"philly-{stem}-{name}.png"
        fig.savefig(path, dpi=100)
        written.append(path)

    loads = list(dict.fromkeys(o.row["load"] for o in outcomes))
    for load in loads:
        at_load = [o for o in outcomes if o.row["load"] == load]
        fig = Figure(figsize=(8, 4))
        ax = fig.subplots()
        for i, o in enumerate(at_load):
            waits = all_waits(o.report)
            if waits:
                n = len(waits)
                ys = [(k + 1) / n for k in range(n)]
                ax.step(waits, ys, where="post", label=o.row["policy"], linestyle=LINES[i % len(LINES)])
        ax.set_xscale("symlog", linthresh=60)
        ax.set(title=f"wait to first bind, load x{load:g} (CDF)", xlabel="seconds", ylabel="fraction of jobs")
        ax.legend(loc="lower right")
        save(fig, f"x{load:g}-wait-cdf")

        fig = Figure(figsize=(8, 4))
        ax = fig.subplots()
        for i, o in enumerate(at_load):
            used = o.report.timeline.used
            if used.times:
                start = o.report.start
                xs = [(t - start) / 3600 for t in used.times] + [(o.report.end - start) / 3600]
                ys = [*used.values, used.values[-1]]
                ax.step(xs, ys, where="post", label=o.row["policy"], linestyle=LINES[i % len(LINES)])
        ax.set(title=f"GPUs in use, load x{load:g}", xlabel="hours since the first submission", ylabel="GPUs")
        ax.legend(loc="best")
        save(fig, f"x{load:g}-gpus")

    save(_summary(Figure(figsize=(12, 7)), [o.row for o in outcomes], loads), "summary")
    return written


def _summary(fig, rows: Sequence[dict], loads: list[float]):
    """Bars of each SUMMARY figure: a group per load, a bar per policy (a missing figure drawn as 0)."""
    grid = fig.subplots(2, 3)
    policies = list(dict.fromkeys(r["policy"] for r in rows))
    value = {(r["policy"], r["load"]): r for r in rows}
    width = 0.8 / max(1, len(policies))
    for ax, (key, title) in zip(grid.flat, SUMMARY, strict=True):
        for i, policy in enumerate(policies):
            heights = [(value.get((policy, load)) or {}).get(key) or 0.0 for load in loads]
            ax.bar([x + i * width for x in range(len(loads))], heights, width, label=policy)
        ax.set_xticks(
            [x + width * (len(policies) - 1) / 2 for x in range(len(loads))], [f"x{ld:g}" for ld in loads]
        )
        ax.set_title(title, fontsize=9)
    grid[0][0].legend(fontsize=8)
    return fig
