"""Summaries of a list of durations, and Jain's fairness index: small pure functions with hand-checkable answers."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Summary:
    """How many values, their mean and two percentiles (None when there are none)."""

    count: int = 0
    mean: float | None = None
    p50: float | None = None
    p99: float | None = None

    def to_builtins(self, digits: int = 3) -> dict:
        def rounded(x: float | None) -> float | None:
            return None if x is None else round(x, digits)

        return {
            "count": self.count,
            "mean": rounded(self.mean),
            "p50": rounded(self.p50),
            "p99": rounded(self.p99),
        }


def percentile(values: Sequence[float], p: float) -> float:
    """The nearest-rank ``p``-th percentile: the smallest value that at least ``p`` % of ``values`` do not
    exceed. Always one of the values, so a reader can check it by counting."""
    if not values:
        raise ValueError("values: a percentile of nothing")
    if not 0 < p <= 100:
        raise ValueError(f"p: {p} is not in (0, 100]")
    ordered = sorted(values)
    return ordered[max(0, math.ceil(p / 100 * len(ordered)) - 1)]


def summarize(values: Sequence[float]) -> Summary:
    """Count, mean, p50 and p99 of ``values``."""
    if not values:
        return Summary()
    return Summary(
        count=len(values),
        mean=sum(values) / len(values),
        p50=percentile(values, 50),
        p99=percentile(values, 99),
    )


def jain_index(ratios: Sequence[float]) -> float | None:
    """Jain's fairness index (sum x)^2 / (n * sum x^2): 1 when every ratio is equal, 1/n when one holds
    everything. None for no ratios, or when every ratio is 0 (nothing to compare)."""
    squares = sum(x * x for x in ratios)
    if not ratios or squares == 0:
        return None
    return sum(ratios) ** 2 / (len(ratios) * squares)
