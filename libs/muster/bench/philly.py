"""Simulating the Philly trace, stepping every cycle and skipping idle time (issue #26).

``philly_scenario(jobs)`` turns the first ``jobs`` jobs of the Philly trace
(by submission; the compact per-job form under
``/work/shared/data/philly-pollux-processed/``, see its README) into a
scenario: ``NODES`` 8-GPU nodes, one queue per virtual cluster, each job
arriving at its submission (seconds after the first) and running its
recorded duration; a job of more than 8 GPUs is a gang of whole-node pods
(of 4 GPUs when its size is no multiple of 8). Cycles are ``TIME_STEP``
seconds apart.

``run(quick)`` simulates it both ways (``Simulation.run(arrivals=True)``,
``skip_idle`` off and on) and reports wall time and cycles of each, and
whether both decided the same; beyond ``STEPPED_MAX_JOBS`` jobs only the
skipping run is timed (stepping would take too long to wait for).
"""

from __future__ import annotations

import csv
import datetime as dt
import math
import os
import time
from pathlib import Path
from typing import Any

import msgspec

from muster.scenario import parse_scenario
from muster.simulate import Simulation

TRACE = Path(os.environ.get("MUSTER_PHILLY_CSV", "/work/shared/data/philly-pollux-processed/philly.csv"))
NODES = 44
"""352 GPUs: a cluster the trace's early weeks keep busy without a backlog that only grows."""
TIME_STEP = 60.0
QUICK_JOBS = (200,)
FULL_JOBS = (2_000, 10_000)
STEPPED_MAX_JOBS = 2_000


def read_trace(path: Path = TRACE) -> list[dict[str, Any]]:
    """The trace's rows, ordered by submission (the file's are not), ties by their order in the file."""
    with path.open(newline="") as f:
        rows = list(csv.DictReader(f))
    for i, row in enumerate(rows):
        row["order"] = i
        row["submitted"] = dt.datetime.fromisoformat(row["timestamp"]).timestamp()
    return sorted(rows, key=lambda r: (r["submitted"], r["order"]))


def _pods(gpus: int) -> dict[str, Any]:
    size = gpus if gpus <= 8 else (8 if gpus % 8 == 0 else 4)
    return {"count": gpus // size, "resources": {"gpu": size}}


def philly_scenario(jobs: int, *, rows: list[dict[str, Any]] | None = None, nodes: int = NODES) -> dict:
    """The first ``jobs`` jobs of the trace as a scenario document (see the module's docstring)."""
    rows = (rows if rows is not None else read_trace())[:jobs]
    first = rows[0]["submitted"] if rows else 0.0
    job_list = [
        {
            "name": f"philly-{i:05d}",
            "queue": f"vc-{row['cluster']}",
            "submitted_at": row["submitted"] - first,
            "duration": float(row["duration"]),
            "pods": [_pods(int(row["num_gpus"]))],
        }
        for i, row in enumerate(rows)
    ]
    queues = [{"name": q} for q in sorted({j["queue"] for j in job_list})]
    span = max([j["submitted_at"] + j["duration"] for j in job_list] or [0.0])
    return {
        "name": f"philly-{jobs}",
        # enough cycles for every job to arrive and, one after another at worst, run
        "config": {"time_step": TIME_STEP, "max_cycles": math.ceil(span / TIME_STEP) * 4 + 1000},
        "nodes": [{"name": f"node-{i:03d}", "resources": {"gpu": 8}} for i in range(nodes)],
        "queues": queues,
        "jobs": job_list,
    }


def _timed(doc: dict, skip_idle: bool) -> tuple[float, Any]:
    simulation = Simulation(parse_scenario(doc), skip_idle=skip_idle)
    started = time.perf_counter()
    result = simulation.run(arrivals=True)
    return time.perf_counter() - started, result


def measure(jobs: int, *, rows: list[dict[str, Any]] | None = None, stepped: bool = True) -> dict:
    """One row: ``jobs`` Philly jobs simulated skipping idle time, and (``stepped``) stepping too."""
    doc = philly_scenario(jobs, rows=rows)
    skip_seconds, skip = _timed(doc, True)
    row: dict[str, Any] = {
        "name": f"{jobs} jobs, {NODES * 8} GPUs, {TIME_STEP:g}s steps",
        "jobs": jobs,
        "simulated_days": round(skip.time / 86400, 1),
        "cycles": skip.cycles,
        "skip_cycles_run": skip.cycles_run,
        "skip_seconds": round(skip_seconds, 2),
        "completed": sum(1 for j in skip.jobs.values() if j.status == "completed"),
    }
    if stepped:
        stepped_seconds, fixed = _timed(doc, False)
        row["stepped_seconds"] = round(stepped_seconds, 2)
        row["speedup"] = round(stepped_seconds / skip_seconds, 1) if skip_seconds > 0 else None
        row["same_result"] = msgspec.structs.replace(skip, cycles_run=None) == fixed
    return row


def run(quick: bool = False, progress=lambda _msg: None) -> list[dict]:
    """Issue #26: the Philly trace's first jobs, stepped and skipping, timed."""
    rows = read_trace()
    out = []
    for jobs in QUICK_JOBS if quick else FULL_JOBS:
        progress(f"philly: {jobs} jobs")
        out.append(measure(jobs, rows=rows, stepped=jobs <= STEPPED_MAX_JOBS))
    return out
