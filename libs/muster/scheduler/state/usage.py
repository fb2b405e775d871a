"""Each queue's past use, for time-based fair share: the intervals its pods were bound within a window.

An interval starts at ``PodBound.at`` and ends at ``PodCompleted.at``, or, for an eviction (whose
confirmation carries no time), at the clock of the last cycle read. Kept only when a usage window is set,
and forgotten once wholly before it (``UsageWindow.since``: the window's start never moves back).
"""

from __future__ import annotations

import math
from typing import ClassVar

import msgspec

from muster.usage_window import UsageWindow

from .pods import BOUND, Job

Interval = tuple[float, float, float, float, float]
"""(start, end, gpu, cpu, memory) of one bound pod."""


class UsageImage(msgspec.Struct, kw_only=True):
    usage_window: UsageWindow | None
    usage: dict[str, list[Interval]]


def decayed_seconds(clock: float, since: float, half_life: float, start: float, end: float) -> float:
    """Seconds of [start, end) inside (since, clock], each weighted by 2^(-age / half_life)."""
    a = max(start, since)
    b = min(end, clock)
    if b <= a:
        return 0.0
    if half_life <= 0:
        return b - a
    tau = half_life / math.log(2)
    return tau * (math.exp(-(clock - b) / tau) - math.exp(-(clock - a) / tau))


class UsageHistory:
    """Closed intervals of bound pods per queue, within the usage window that closes at the last clock read."""

    CACHES: ClassVar[frozenset[str]] = frozenset()
    IMAGED_AS: ClassVar[dict[str, tuple[str, ...]]] = {"window": ("usage_window",), "intervals": ("usage",)}

    def __init__(self, window: UsageWindow | None = None) -> None:
        self.window = window
        self.intervals: dict[str, list[Interval]] = {}

    def close(self, job: Job, i: int, end: float) -> None:
        """Pod i of ``job`` stopped running at ``end``: its interval joins its queue's."""
        if self.window is None:
            return
        start = job.bound_at[i]
        end = max(start, end)
        if end > start:
            gpu, cpu, mem = job.acct[i]
            self.intervals.setdefault(job.queue, []).append((start, end, gpu, float(cpu), float(mem)))

    def forget_before(self, clock: float) -> None:
        """Drop the intervals that ended before the window that closes at ``clock``."""
        if self.window is None:
            return
        horizon = self.window.since(clock)
        for queue in sorted(self.intervals):
            kept = [iv for iv in self.intervals[queue] if iv[1] > horizon]
            if len(kept) != len(self.intervals[queue]):
                self.intervals[queue] = kept

    def decayed(
        self, jobs: dict[str, Job], clock: float, since: float, half_life: float
    ) -> dict[str, list[float]]:
        """Per leaf queue, resource-seconds of bound pods (closed intervals, then ``jobs`` still running)
        within (since, clock], each second weighted by 2^(-age / half_life) (no decay when half_life is
        0)."""
        out: dict[str, list[float]] = {}

        def add(queue: str, start: float, end: float, amounts: tuple[float, float, float]) -> None:
            w = decayed_seconds(clock, since, half_life, start, end)
            if w > 0:
                row = out.setdefault(queue, [0.0, 0.0, 0.0])
                for r in range(3):
                    row[r] += w * amounts[r]

        for queue in sorted(self.intervals):
            for start, end, gpu, cpu, mem in self.intervals[queue]:
                add(queue, start, end, (gpu, cpu, mem))
        for name in sorted(jobs):
            job = jobs[name]
            if not job.n_running:
                continue
            for i, st in enumerate(job.state):
                if st == BOUND:
                    gpu, cpu, mem = job.acct[i]
                    add(job.queue, job.bound_at[i], clock, (gpu, float(cpu), float(mem)))
        return out

    def image(self) -> UsageImage:
        return UsageImage(usage_window=self.window, usage=self.intervals)

    @classmethod
    def restore(cls, image: UsageImage) -> UsageHistory:
        history = cls(image.usage_window)
        history.intervals = image.usage
        return history
