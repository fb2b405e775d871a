"""The report: what a log says about waits, shares and lost work, per queue and for the cluster.

``Report.to_builtins()`` is the ``--json`` document; its keys are stable and documented in
docs/report.md. Seconds are rounded to the millisecond, GPU-hours to the microhour.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from muster.report.stats import Summary
from muster.report.timeline import StepSeries

DESERVED_FROM = ("fair_share", "quota")
"""Where a report's deserved share comes from: the allocator's published fair share (QueueStatus), or,
for a log that carries none, the queues' GPU quotas."""

BUCKETS = 100
"""Points of each series over time in the JSON document (time-weighted means of equal buckets)."""


def _hours(seconds: float) -> float:
    return round(seconds / 3600, 6)


@dataclass
class QueueFigures:
    """One queue's figures, over its subtree (its own jobs and its descendants')."""

    name: str
    parent: str | None
    jobs: int = 0
    started: int = 0
    completed: int = 0
    failed: int = 0
    wait: Summary = Summary()
    """Seconds from submission to the first pod bound, of the jobs that started."""
    completion: Summary = Summary()
    """Seconds from submission to the last pod completed, of the jobs that completed."""
    multi_node_wait: Summary = Summary()
    """``wait`` of the gangs whose pods, when they first ran, landed on more than one node."""
    waits: list[float] = field(default_factory=list)
    """Every wait summarised in ``wait``, for plots (not in the JSON document)."""
    used_gpu_seconds: float = 0.0
    fair_share_gpu_seconds: float | None = None
    """None when the log carries no QueueStatus."""
    quota_gpu_seconds: float = 0.0
    below_quota_seconds: float = 0.0
    """Seconds below its quota while one of its jobs waited for a GPU."""
    borrowed_gpu_seconds: float = 0.0
    lent_gpu_seconds: float = 0.0
    evictions: int = 0
    """Pods evicted (by the scheduler, or with a lost node; not a deleted job's)."""
    evicted_gpu_seconds: float = 0.0
    """Work the evictions destroyed: each pod's run time since its last start x its GPUs."""

    @property
    def deserved_gpu_seconds(self) -> float:
        return self.quota_gpu_seconds if self.fair_share_gpu_seconds is None else self.fair_share_gpu_seconds

    def used_to_deserved(self) -> float | None:
        d = self.deserved_gpu_seconds
        return self.used_gpu_seconds / d if d > 0 else None

    def to_builtins(self) -> dict:
        ratio = self.used_to_deserved()
        return {
            "parent": self.parent,
            "jobs": self.jobs,
            "started": self.started,
            "completed": self.completed,
            "failed": self.failed,
            "wait_seconds": self.wait.to_builtins(),
            "completion_seconds": self.completion.to_builtins(),
            "multi_node_wait_seconds": self.multi_node_wait.to_builtins(),
            "gpu_hours_used": _hours(self.used_gpu_seconds),
            "gpu_hours_deserved": _hours(self.deserved_gpu_seconds),
            "gpu_hours_quota": _hours(self.quota_gpu_seconds),
            "gpu_hours_fair_share": None
            if self.fair_share_gpu_seconds is None
            else _hours(self.fair_share_gpu_seconds),
            "used_to_deserved": None if ratio is None else round(ratio, 6),
            "below_quota_with_pending_seconds": round(self.below_quota_seconds, 3),
            "gpu_hours_borrowed": _hours(self.borrowed_gpu_seconds),
            "gpu_hours_lent": _hours(self.lent_gpu_seconds),
            "evictions": self.evictions,
            "gpu_hours_evicted": _hours(self.evicted_gpu_seconds),
        }


@dataclass
class ClusterFigures:
    jobs: int = 0
    started: int = 0
    completed: int = 0
    failed: int = 0
    gpus: float = 0.0
    """GPUs registered at the end of the log."""
    used_gpu_seconds: float = 0.0
    available_gpu_seconds: float = 0.0
    makespan: float | None = None
    """First submission to the last job's end; None unless every job (not deleted) ended."""
    jain_index: float | None = None
    wait: Summary = Summary()
    completion: Summary = Summary()
    evictions: int = 0
    evicted_gpu_seconds: float = 0.0
    below_quota_seconds: float = 0.0
    """The leaf queues' ``below_quota_seconds`` summed: seconds of guarantee broken, queue by queue."""
    borrowed_gpu_seconds: float = 0.0
    """The top-level queues' ``borrowed_gpu_seconds`` summed: GPU-seconds held beyond their quotas."""

    def utilisation(self) -> float | None:
        """GPU-hours used over GPU-hours available in the window."""
        return self.used_gpu_seconds / self.available_gpu_seconds if self.available_gpu_seconds > 0 else None

    def to_builtins(self) -> dict:
        u = self.utilisation()
        return {
            "jobs": self.jobs,
            "started": self.started,
            "completed": self.completed,
            "failed": self.failed,
            "gpus": self.gpus,
            "gpu_hours_used": _hours(self.used_gpu_seconds),
            "gpu_hours_available": _hours(self.available_gpu_seconds),
            "utilisation_mean": None if u is None else round(u, 6),
            "makespan_seconds": None if self.makespan is None else round(self.makespan, 3),
            "jain_index": None if self.jain_index is None else round(self.jain_index, 6),
            "wait_seconds": self.wait.to_builtins(),
            "completion_seconds": self.completion.to_builtins(),
            "evictions": self.evictions,
            "gpu_hours_evicted": _hours(self.evicted_gpu_seconds),
            "below_quota_with_pending_seconds": round(self.below_quota_seconds, 3),
            "gpu_hours_borrowed": _hours(self.borrowed_gpu_seconds),
        }


@dataclass
class QueueSeries:
    """One queue's GPUs over time: held (its subtree), its fair share as published, its quota."""

    used: StepSeries = field(default_factory=StepSeries)
    fair_share: StepSeries = field(default_factory=StepSeries)
    quota: StepSeries = field(default_factory=StepSeries)


@dataclass
class Timeline:
    capacity: StepSeries = field(default_factory=StepSeries)
    used: StepSeries = field(default_factory=StepSeries)
    queues: dict[str, QueueSeries] = field(default_factory=dict)


@dataclass
class Report:
    start: float
    end: float
    deserved_from: str
    """One of DESERVED_FROM."""
    queues: dict[str, QueueFigures]
    """Parents before their children."""
    depth: dict[str, int]
    cluster: ClusterFigures
    timeline: Timeline
    notes: list[str] = field(default_factory=list)

    @property
    def seconds(self) -> float:
        return self.end - self.start

    def deserved_series(self, queue: str) -> StepSeries:
        s = self.timeline.queues[queue]
        return s.fair_share if self.deserved_from == "fair_share" else s.quota

    def to_builtins(self, buckets: int = BUCKETS) -> dict:
        return {
            "window": {
                "start": round(self.start, 3),
                "end": round(self.end, 3),
                "seconds": round(self.seconds, 3),
            },
            "deserved_from": self.deserved_from,
            "cluster": self.cluster.to_builtins(),
            "queues": {name: q.to_builtins() for name, q in self.queues.items()},
            "timeline": self._timeline(buckets),
            "notes": list(self.notes),
        }

    def _timeline(self, buckets: int) -> dict:
        start, end = self.start, self.end
        n = buckets if end > start else 0

        def means(series: StepSeries) -> list[float]:
            return series.bucket_means(start, end, n)

        def rounded(values: list[float]) -> list[float]:
            return [round(v, 6) for v in values]

        used, capacity = means(self.timeline.used), means(self.timeline.capacity)
        return {
            "bucket_seconds": round((end - start) / n, 3) if n else 0.0,
            "gpus": rounded(capacity),
            "gpus_used": rounded(used),
            "utilisation": rounded([u / c if c > 0 else 0.0 for u, c in zip(used, capacity, strict=True)]),
            "queues": {
                name: {
                    "used": rounded(means(s.used)),
                    "deserved": rounded(means(self.deserved_series(name))),
                    "quota": rounded(means(s.quota)),
                }
                for name, s in self.timeline.queues.items()
            },
        }
