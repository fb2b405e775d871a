"""Check a scenario's ``expect`` block against what a run produced.

Works on the simulate result (or a live ``muster status --json`` document
of the same shape), so the same expectations pin the simulator and a
running system.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

import msgspec

from muster.scenario import model as m
from muster.scenario.convert import expected_amount

TOLERANCE = 1e-6
_STATUSES = ("running", "pending", "preempted", "completed")


@dataclass(frozen=True)
class Failure:
    """One expectation that did not hold."""

    expectation: str
    """Where it is written, e.g. ``expect.running: train-1``."""
    expected: Any
    seen: Any

    def __str__(self) -> str:
        return f"{self.expectation}: expected {_show(self.expected)}, saw {_show(self.seen)}"


def _show(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, list):
        return "[" + ", ".join(_show(v) for v in value) + "]"
    return str(value)


def check(expect: m.Expect | None, result: Any) -> list[Failure]:
    """Every expectation of ``expect`` that ``result`` breaks, in the order
    written. ``result`` is a ``SimulationResult`` or its JSON as a dict."""
    if expect is None:
        return []
    doc = result if isinstance(result, dict) else msgspec.to_builtins(result)
    jobs: dict[str, Any] = doc.get("jobs", {})
    queues: dict[str, Any] = doc.get("queues", {})
    failures: list[Failure] = []
    for status in _STATUSES:
        for name in getattr(expect, status) or []:
            job = jobs.get(name)
            seen = job["status"] if job else "absent"
            if seen != status:
                if job and job.get("reason"):
                    seen = f"{seen} ({job['reason']})"
                failures.append(Failure(f"expect.{status}: {name}", status, seen))
    for name, nodes in expect.placements.items():
        job = jobs.get(name) or {}
        seen_nodes = sorted(pod["node"] for pod in job.get("pods", []))
        if Counter(seen_nodes) != Counter(nodes):
            failures.append(Failure(f"expect.placements.{name}", sorted(nodes), seen_nodes))
    for key in ("fair_share", "allocated"):
        for queue, amounts in getattr(expect, key).items():
            seen_amounts = (queues.get(queue) or {}).get(key, {})
            for resource, value in amounts.items():
                where = f"expect.{key}.{queue}.{resource}"
                want = expected_amount(resource, value, where)
                got = float(seen_amounts.get(resource, 0.0))
                if abs(got - want) > TOLERANCE:
                    failures.append(Failure(where, want, got))
    for name, words in expect.reasons.items():
        seen_reason = (jobs.get(name) or {}).get("reason") or ""
        if words not in seen_reason:
            failures.append(Failure(f"expect.reasons.{name}", words, seen_reason or "no reason"))
    return failures
