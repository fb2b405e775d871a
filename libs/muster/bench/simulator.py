"""How long the simulator takes over the whole Philly trace (issue #26: under 2 minutes on this machine).

The jobs submitted from ``SINCE`` on (2017-10-01: 76,590 of them) on ``NODES`` 8-GPU nodes (2,816 GPUs,
the 11 virtual clusters' machines together), as ``philly.philly_scenario`` builds them, simulated
skipping idle time with each job arriving at its submission. Each
row times one prefix of those jobs (the first ``jobs`` by submission; None: all), split into building
the scenario (``setup_s``: the scenario document, then parsing and checking it) and simulating it
(``simulate_s``), with the CPU time the process spent (``cpu_s``: on a shared machine the wall time
also counts the others' turns). The whole trace's row says whether its wall time met ``TARGET_S``.
"""

from __future__ import annotations

import datetime as dt
import time
from typing import Any

from muster.bench import philly
from muster.scenario import parse_scenario
from muster.simulate import Simulation

SINCE = "2017-10-01"
NODES = 352
"""2,816 GPUs."""
TARGET_S = 120.0
FULL_JOBS: tuple[int | None, ...] = (10_000, 20_000, None)
QUICK_JOBS: tuple[int | None, ...] = (1_000,)


def rows_since(rows: list[dict[str, Any]], since: str = SINCE) -> list[dict[str, Any]]:
    """The trace's rows (``philly.read_trace``'s, in submission order) submitted at or after ``since``
    (a date, read as ``philly.read_trace`` reads the timestamps)."""
    start = dt.datetime.fromisoformat(since).timestamp()
    return [r for r in rows if r["submitted"] >= start]


def measure(rows: list[dict[str, Any]], jobs: int | None = None, *, nodes: int = NODES) -> dict[str, Any]:
    """One row: the first ``jobs`` of ``rows`` (None: all) simulated on ``nodes`` 8-GPU nodes, timed."""
    count = len(rows) if jobs is None else min(jobs, len(rows))
    started, cpu = time.perf_counter(), time.process_time()
    simulation = Simulation(
        parse_scenario(philly.philly_scenario(count, rows=rows, nodes=nodes)), skip_idle=True
    )
    built = time.perf_counter()
    result = simulation.run(arrivals=True)
    done = time.perf_counter()
    row: dict[str, Any] = {
        "name": f"{'whole trace' if jobs is None else f'first {count} jobs'} from {SINCE}, {nodes * 8} GPUs",
        "jobs": count,
        "simulated_days": round(result.time / 86400, 1),
        "cycles": result.cycles,
        "cycles_run": result.cycles_run,
        "evictions": len(result.evictions),
        "setup_s": round(built - started, 2),
        "simulate_s": round(done - built, 2),
        "wall_s": round(done - started, 2),
        "cpu_s": round(time.process_time() - cpu, 2),
    }
    if jobs is None:
        row["target_s"] = TARGET_S
        row["met"] = row["wall_s"] <= TARGET_S
    return row


def run(
    quick: bool = False, progress=lambda _msg: None, rows: list[dict[str, Any]] | None = None
) -> list[dict]:
    """Issue #26's target: prefixes of the trace from ``SINCE``, then (unless ``quick``) all of it."""
    rows = rows_since(philly.read_trace() if rows is None else rows)
    out = []
    for jobs in QUICK_JOBS if quick else FULL_JOBS:
        progress(f"simulator: {'the whole trace' if jobs is None else f'{jobs} jobs'} of Philly")
        out.append(measure(rows, jobs))
    return out
