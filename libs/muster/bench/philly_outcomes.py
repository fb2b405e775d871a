"""``muster bench philly``: outcomes of four sharing policies on the Philly trace, at three loads (issue #26).

A workload (``philly_workload``) is a selection of the trace's jobs on a cluster: by default the first
``philly_trace.DEFAULT_JOBS`` jobs from 2017-10-01 on the trace's 2,816 GPUs, quotas 8 GPUs x each virtual cluster's
nodes; ``quick``, Pollux's 160-job sample on 64 GPUs. Each (policy, load) pair simulates the workload
with its arrivals ``load`` times faster under that policy (``muster.bench.philly_policies``), in a
simulation that publishes queue statuses as the live allocator does (``muster.report.simulated``), and
reads the figures off ``muster report``'s fold of that simulation's log: every figure has its home in
``muster.report``; a row only names and rounds them.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from muster.bench import philly_trace as trace
from muster.bench.philly_policies import POLICIES, Policy
from muster.report import Report, build_report
from muster.report.simulated import ReportedSimulation
from muster.scenario import parse_scenario

LOADS: tuple[int, ...] = (1, 4, 8)
"""Time compression factors: arrivals 1, 4 and 8 times faster than the trace's."""
QUICK_NODES = 8
"""Pollux's 64 GPUs, as 8-GPU nodes."""

ROW_KEYS = (
    "policy",
    "load",
    "jobs",
    "started",
    "completed",
    "wait_mean_s",
    "wait_p50_s",
    "wait_p99_s",
    "quota_violation_s",
    "borrowed_gpu_hours",
    "jain",
    "utilisation",
    "gpu_hours_lost_to_eviction",
    "evictions",
    "makespan_s",
    "window_s",
    "wall_s",
)


@dataclass(frozen=True)
class Workload:
    name: str
    jobs: Sequence[trace.TraceJob]
    cluster_nodes: dict[str, int]
    """The sized virtual clusters' node counts (their quotas)."""
    nodes: int | None
    """8-GPU nodes of the cluster (None: the sized clusters' own count)."""

    def scenario(self, load: float) -> dict:
        """The workload as a scenario document, arrivals ``load`` times faster."""
        return trace.scenario(
            self.jobs, self.cluster_nodes, name=f"{self.name}-x{load:g}", compress=load, nodes=self.nodes
        )

    @property
    def gpus(self) -> int:
        nodes = sum(self.cluster_nodes.values()) if self.nodes is None else self.nodes
        return nodes * trace.GPUS_PER_NODE


def philly_workload(
    folder: Path = trace.DATA, jobs: int | None = trace.DEFAULT_JOBS, quick: bool = False
) -> Workload:
    """The jobs a run simulates (see the module's docstring); ``jobs`` None: every job from 2017-10-01."""
    every = trace.read_jobs(folder)
    sized = trace.read_cluster_nodes(folder)
    if quick:
        return Workload("philly-pollux-160", trace.pollux_sample(every), sized, QUICK_NODES)
    chosen = trace.since(every, limit=jobs)
    return Workload(f"philly-{'all' if jobs is None else jobs}", chosen, sized, None)


def outcome_row(report: Report, *, policy: str, load: float, wall: float) -> dict:
    """One (policy, load) row: the report's cluster figures under the benchmark's names."""
    c = report.cluster
    util = c.utilisation()
    return {
        "policy": policy,
        "load": load,
        "jobs": c.jobs,
        "started": c.started,
        "completed": c.completed,
        "wait_mean_s": _round(c.wait.mean, 1),
        "wait_p50_s": _round(c.wait.p50, 1),
        "wait_p99_s": _round(c.wait.p99, 1),
        "quota_violation_s": round(c.below_quota_seconds, 1),
        "borrowed_gpu_hours": round(c.borrowed_gpu_seconds / 3600, 3),
        "jain": _round(c.jain_index, 4),
        "utilisation": _round(util, 4),
        "gpu_hours_lost_to_eviction": round(c.evicted_gpu_seconds / 3600, 3),
        "evictions": c.evictions,
        "makespan_s": _round(c.makespan, 1),
        "window_s": round(report.seconds, 1),
        "wall_s": round(wall, 2),
    }


def _round(x: float | None, digits: int) -> float | None:
    return None if x is None else round(x, digits)


def simulate_and_report(doc: dict) -> Report:
    """``doc`` simulated with its jobs arriving at their submission, and the report of its log."""
    simulation = ReportedSimulation(parse_scenario(doc))
    simulation.run(arrivals=True)
    return build_report(simulation.log.events)


@dataclass
class Outcome:
    row: dict
    report: Report


def run_one(workload: Workload, policy: Policy, load: float) -> Outcome:
    """One (policy, load) pair: simulated, reported, timed (``wall_s``: building, simulating, reporting)."""
    started = time.perf_counter()
    report = simulate_and_report(policy.apply(workload.scenario(load)))
    wall = time.perf_counter() - started
    return Outcome(outcome_row(report, policy=policy.name, load=load, wall=wall), report)


def run(
    workload: Workload,
    *,
    loads: Sequence[float] = LOADS,
    policies: Sequence[Policy] = POLICIES,
    progress: Callable[[str], None] = lambda _msg: None,
) -> list[Outcome]:
    """Every policy at every load, load by load."""
    out = []
    for load in loads:
        for policy in policies:
            progress(f"philly {workload.name}: {policy.name} at load x{load:g}")
            out.append(run_one(workload, policy, load))
    return out
