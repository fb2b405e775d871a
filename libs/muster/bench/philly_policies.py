"""The four ways of sharing a cluster that ``muster bench philly`` sets side by side (issue #26).

Each policy is a change to a scenario document built with every queue's GPU quota set and its limit
unset, the actions KAI runs by default, and no time-based fair share:

- ``strict``: no borrowing. Each queue's GPU limit is its quota, so a queue never holds more than it is
  guaranteed (a queue with quota 0 runs nothing) and idle GPUs stay idle.
- ``borrow``: queues borrow idle GPUs beyond their quota, but nobody takes them back: the ``reclaim``
  action is off, so a queue below its quota waits for borrowed GPUs to free up.
- ``default``: muster's default, KAI's actions (allocate, consolidate, reclaim, preempt, stale-gang
  eviction): queues borrow, and a queue below its fair share reclaims from those above theirs.
- ``time-fair``: the default with time-based fair share (the scenario format's ``fairness`` block at its
  defaults: a week's sliding window, a day's half-life, k = 1): past usage lowers a queue's share of
  what is left over beyond quotas.

The rules themselves live where the allocator keeps them (limits in ``muster.scheduler.capacity``,
actions in ``muster.scheduler.actions``, usage in ``muster.usage_window``); a policy only sets the
scenario's fields that choose among them.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

from muster.scenario.model import ALL_ACTIONS


@dataclass(frozen=True)
class Policy:
    name: str
    summary: str
    limit_is_quota: bool = False
    """Each queue's GPU limit set to its GPU quota."""
    without: tuple[str, ...] = ()
    """Actions left out of KAI's default list."""
    time_based_fair_share: bool = False

    def apply(self, doc: dict) -> dict:
        """A copy of the scenario ``doc`` under this policy; ``doc`` is left as it was."""
        out = copy.deepcopy(doc)
        config = out.setdefault("config", {})
        config["actions"] = [a for a in ALL_ACTIONS if a not in self.without]
        if self.time_based_fair_share:
            config["fairness"] = {}
        if self.limit_is_quota:
            for queue in out.get("queues", []):
                gpu = queue.setdefault("resources", {}).setdefault("gpu", {})
                gpu["limit"] = gpu.get("quota", 0)
        out["name"] = f"{doc.get('name', 'scenario')}-{self.name}"
        return out


POLICIES: tuple[Policy, ...] = (
    Policy("strict", "no borrowing: each queue's limit is its quota", limit_is_quota=True),
    Policy("borrow", "borrowing without reclaim", without=("reclaim",)),
    Policy("default", "muster's default: KAI's actions"),
    Policy("time-fair", "the default with time-based fair share", time_based_fair_share=True),
)
BY_NAME = {p.name: p for p in POLICIES}
