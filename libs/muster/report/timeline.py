"""Figures over time as step functions: a value holds from its point until the next point.

The fold appends a point whenever what it measures changes; readers take the points as they are
(plots) or as time-weighted means over equal buckets (the JSON document).
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class StepSeries:
    """Times (non-decreasing) and the value that holds from each time on."""

    times: list[float] = field(default_factory=list)
    values: list[float] = field(default_factory=list)

    def set(self, at: float, value: float) -> None:
        """From ``at`` on, ``value`` (a point is added only when the value changes)."""
        if self.values and self.values[-1] == value:
            return
        if self.times and self.times[-1] == at:
            self.values[-1] = value
            if len(self.values) > 1 and self.values[-2] == value:
                self.times.pop()
                self.values.pop()
            return
        self.times.append(at)
        self.values.append(value)

    def bucket_means(self, start: float, end: float, buckets: int) -> list[float]:
        """The time-weighted mean over each of ``buckets`` equal parts of [``start``, ``end``) (0 where no
        point holds yet); none for an empty window."""
        if end <= start or buckets <= 0:
            return []
        width = (end - start) / buckets
        sums = [0.0] * buckets
        for i, (t, v) in enumerate(zip(self.times, self.values, strict=True)):
            until = self.times[i + 1] if i + 1 < len(self.times) else end
            _spread(sums, start, width, max(t, start), min(until, end), v)
        return [s / width for s in sums]


def _spread(sums: list[float], start: float, width: float, begin: float, end: float, value: float) -> None:
    """Add ``value`` x the time each bucket shares with [``begin``, ``end``)."""
    if end <= begin or value == 0:
        return
    first = min(len(sums) - 1, int((begin - start) / width))
    last = min(len(sums) - 1, int((end - start) / width))
    for b in range(first, last + 1):
        lo, hi = start + b * width, start + (b + 1) * width
        overlap = min(end, hi) - max(begin, lo)
        if overlap > 0:
            sums[b] += value * overlap
