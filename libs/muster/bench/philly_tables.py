"""``muster bench philly``'s text output: one table per load, a row per policy, the report's headline
figures (``muster.bench.philly_outcomes.outcome_row``), aligned as ``muster report`` aligns its own."""

from __future__ import annotations

from collections.abc import Sequence

from muster.report.text import columns

COLUMNS = (
    ("policy", "policy", None),
    ("jobs", "jobs", None),
    ("started", "started", None),
    ("wait_mean_s", "wait mean s", 0),
    ("wait_p50_s", "p50 s", 0),
    ("wait_p99_s", "p99 s", 0),
    ("quota_violation_s", "below quota s", 0),
    ("borrowed_gpu_hours", "borrowed GPU-h", 0),
    ("jain", "Jain", 3),
    ("utilisation", "util", 3),
    ("evictions", "evictions", None),
    ("gpu_hours_lost_to_eviction", "lost GPU-h", 1),
    ("wall_s", "wall s", 1),
)


def _cell(value: object, digits: int | None) -> str:
    if value is None:
        return "-"
    if digits is None or not isinstance(value, int | float):
        return str(value)
    return f"{value:,.{digits}f}"


def load_tables(rows: Sequence[dict], title: str) -> list[str]:
    """One table per load in ``rows`` (in their order), a row per policy, as lines of text."""
    lines: list[str] = []
    for load in dict.fromkeys(r["load"] for r in rows):
        table = [[header for _, header, _ in COLUMNS]]
        table += [[_cell(r.get(key), d) for key, _, d in COLUMNS] for r in rows if r["load"] == load]
        lines += ["" if lines else None, f"{title}, load x{load:g}", *columns(table)]
    return [line for line in lines if line is not None]
