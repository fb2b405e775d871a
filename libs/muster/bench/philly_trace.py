"""The Philly trace as a scenario: queues, quotas, jobs and gangs from the data folder (issue #26).

The data folder (``/work/shared/data/philly-pollux-processed/``, its README) holds ``philly.csv``, one
row per job (submission, duration, GPUs, virtual cluster), and ``helios_artifact/philly_vc.csv``, each
virtual cluster's node count. The scenario reads them as the Helios artifact sizes Philly:

- one queue per virtual cluster, ``vc-<hash>``: the 11 that ``philly_vc.csv`` sizes, in its order, with
  a GPU quota of 8 GPUs x their node count (2,816 GPUs in all); then each other ("tiny") cluster that
  has jobs in the selection, sorted, with quota 0;
- one 8-GPU node per node of the sized clusters (``cluster_quotas`` scales the quotas to a smaller
  cluster: the quick variant runs on 64 GPUs);
- one job per row, submitted ``(its submission - the first) / compress`` seconds into the run (time
  compression raises the load: the same work arrives ``compress`` times faster), running its recorded
  duration; a job of more than 8 GPUs is a gang of 8-GPU pods, the remainder in one smaller pod
  (12 -> 8 + 4), all of which must run together.

Two selections: ``since`` (the jobs submitted from a date on, as Helios does from 2017-10-01, the first
``jobs`` of them) and ``pollux_sample`` (Pollux's rule for its 160-job workloads).
"""

from __future__ import annotations

import csv
import datetime as dt
import math
import os
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

DATA = Path(os.environ.get("MUSTER_PHILLY_DATA", "/work/shared/data/philly-pollux-processed"))
"""The data folder; ``muster bench philly --data`` names another."""
JOBS_CSV = "philly.csv"
VC_CSV = "helios_artifact/philly_vc.csv"
GPUS_PER_NODE = 8
HELIOS_START = dt.datetime(2017, 10, 1, tzinfo=dt.UTC)
"""Helios simulates the jobs submitted from this day on."""
DEFAULT_JOBS = 10_000
"""The jobs from 2017-10-01 ``muster bench philly`` takes unless told (``--jobs``): twelve runs in minutes."""
TIME_STEP = 60.0
"""Seconds between two cycles: Pollux's scheduling interval."""


class TraceError(ValueError):
    """A data folder muster cannot read: names the file and what is wrong with it."""


@dataclass(frozen=True)
class TraceJob:
    """One row of ``philly.csv``."""

    submitted: float
    """Seconds since the epoch (the file's timestamps read as UTC)."""
    duration: float
    gpus: int
    cluster: str
    """The hashed virtual cluster."""

    @property
    def gpu_seconds(self) -> float:
        return self.duration * self.gpus


def read_jobs(folder: Path = DATA) -> list[TraceJob]:
    """The trace's jobs ordered by submission (the file's rows are not), ties in file order."""
    path = folder / JOBS_CSV
    jobs = []
    for line, row in enumerate(_rows(path, ("timestamp", "duration", "num_gpus", "cluster")), 2):
        try:
            stamp = dt.datetime.fromisoformat(row["timestamp"]).replace(tzinfo=dt.UTC)
            jobs.append(
                TraceJob(stamp.timestamp(), float(row["duration"]), int(row["num_gpus"]), row["cluster"])
            )
        except ValueError as exc:
            raise TraceError(f"{path}: line {line}: {exc}") from None
    return sorted(jobs, key=lambda j: j.submitted)  # stable: ties keep the file's order


def read_cluster_nodes(folder: Path = DATA) -> dict[str, int]:
    """Each sized virtual cluster's node count, in the file's order."""
    path = folder / VC_CSV
    out = {}
    for line, row in enumerate(_rows(path, ("vc", "node num")), 2):
        try:
            out[row["vc"]] = int(row["node num"])
        except ValueError as exc:
            raise TraceError(f"{path}: line {line}: node num: {exc}") from None
    return out


def _rows(path: Path, columns: Sequence[str]) -> list[dict[str, str]]:
    try:
        with path.open(newline="") as f:
            reader = csv.DictReader(f)
            missing = [c for c in columns if c not in (reader.fieldnames or ())]
            if missing:
                raise TraceError(f"{path}: no column {', '.join(missing)}")
            return list(reader)
    except OSError as exc:
        raise TraceError(f"{path}: {exc.strerror or exc}") from None


def since(
    jobs: Sequence[TraceJob], start: dt.datetime = HELIOS_START, limit: int | None = None
) -> list[TraceJob]:
    """The first ``limit`` (None: all) of ``jobs`` submitted at ``start`` or later."""
    kept = [j for j in jobs if j.submitted >= start.timestamp()]
    return kept if limit is None else kept[:limit]


POLLUX_JOBS = 160
POLLUX_SEED = 0
POLLUX_START_HOUR = 2
POLLUX_HOURS = 8


def pollux_sample(
    jobs: Sequence[TraceJob],
    n: int = POLLUX_JOBS,
    *,
    seed: int = POLLUX_SEED,
    start_hour: int = POLLUX_START_HOUR,
    hours: int = POLLUX_HOURS,
) -> list[TraceJob]:
    """Pollux's sampling rule (the data folder's README, "Pollux workloads"): of the jobs that ran at
    least a minute and used less than 1,000 GPU-hours, those whose time of day, moved back
    ``start_hour`` hours, falls in the first ``hours`` hours; ``n`` of them drawn with ``seed``; each
    submitted at that time of day (seconds). Pollux draws with pandas and swaps in its own job sizes;
    this draws with Python's ``random`` and keeps each job's Philly GPUs and duration."""
    kept = []
    for job in jobs:
        if job.duration < 60 or job.gpu_seconds >= 1000 * 3600:
            continue
        shifted = dt.datetime.fromtimestamp(job.submitted, dt.UTC) - dt.timedelta(hours=start_hour)
        if shifted.hour < hours:
            kept.append(
                replace(job, submitted=float(shifted.hour * 3600 + shifted.minute * 60 + shifted.second))
            )
    if len(kept) < n:
        raise TraceError(f"pollux sample: {n} jobs asked, {len(kept)} qualify")
    drawn = random.Random(seed).sample(range(len(kept)), n)
    return sorted((kept[i] for i in drawn), key=lambda j: j.submitted)


def gang_pods(gpus: int) -> list[dict]:
    """A job's pod entries: one pod of up to 8 GPUs; beyond, 8-GPU pods and one pod of the remainder."""
    if gpus < 1:
        raise TraceError(f"num_gpus: {gpus}: a job asks for at least one GPU")
    whole, rest = divmod(gpus, GPUS_PER_NODE)
    pods = [{"count": whole, "resources": {"gpu": GPUS_PER_NODE}}] if whole else []
    return pods + ([{"count": 1, "resources": {"gpu": rest}}] if rest else [])


def cluster_quotas(nodes: dict[str, int], gpus: int) -> dict[str, int]:
    """Each sized cluster's GPU quota on a cluster of ``gpus`` GPUs: 8 x its node count scaled by
    ``gpus`` over their sum, in whole GPUs that add up to ``gpus`` (largest remainders first, ties in
    ``nodes``' order). On the trace's own 2,816 GPUs: 8 x its node count."""
    total = GPUS_PER_NODE * sum(nodes.values())
    exact = {vc: GPUS_PER_NODE * n * gpus / total for vc, n in nodes.items()}
    quotas = {vc: math.floor(x) for vc, x in exact.items()}
    left = gpus - sum(quotas.values())
    order = sorted(exact, key=lambda vc: -(exact[vc] - quotas[vc]))  # stable: ties keep nodes' order
    for vc in order[:left]:
        quotas[vc] += 1
    return quotas


def queue_name(cluster: str) -> str:
    return f"vc-{cluster}"


def scenario(
    jobs: Sequence[TraceJob],
    cluster_nodes: dict[str, int],
    *,
    name: str,
    compress: float = 1.0,
    nodes: int | None = None,
) -> dict:
    """``jobs`` as a scenario document (see the module's docstring), their arrivals ``compress`` times
    faster, on ``nodes`` 8-GPU nodes (None: the sized clusters' own node count)."""
    if compress <= 0:
        raise ValueError(f"compress: {compress} is not positive")
    count = sum(cluster_nodes.values()) if nodes is None else nodes
    quotas = cluster_quotas(cluster_nodes, GPUS_PER_NODE * count)
    tiny = sorted({j.cluster for j in jobs} - set(quotas))
    first = jobs[0].submitted if jobs else 0.0
    job_list = [
        {
            "name": f"philly-{i:05d}",
            "queue": queue_name(j.cluster),
            "submitted_at": (j.submitted - first) / compress,
            "duration": j.duration,
            "pods": gang_pods(j.gpus),
        }
        for i, j in enumerate(jobs)
    ]
    queues = [
        {"name": queue_name(vc), "resources": {"gpu": {"quota": q}}}
        for vc, q in [*quotas.items(), *((vc, 0) for vc in tiny)]
    ]
    return {
        "name": name,
        "config": {"time_step": TIME_STEP, "max_cycles": _max_cycles(job_list), "skip_idle": True},
        "nodes": [{"name": f"node-{i:03d}", "resources": {"gpu": GPUS_PER_NODE}} for i in range(count)],
        "queues": queues,
        "jobs": job_list,
    }


def _max_cycles(jobs: Iterable[dict]) -> int:
    """Cycles enough for every job to arrive and then, one after another at worst, run."""
    jobs = list(jobs)
    last = max((j["submitted_at"] for j in jobs), default=0.0)
    serial = sum(j["duration"] for j in jobs)
    return math.ceil((last + serial) / TIME_STEP) + 1000
