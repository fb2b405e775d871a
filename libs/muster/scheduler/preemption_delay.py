"""KAI's preemption delay (§15, new in v0.17): a pending job waits a while before it may make anyone go.

A job with a delay may not make reclaim, preempt or consolidate evict pods until
``delay`` seconds after the later of its creation (``submitted_at``) and the last
eviction of one of its own pods by one of those actions (stale-gang evictions do
not count). Allocating into free capacity is unaffected, and the job may still be
chosen as a victim. A delay of 0 (or none) is no delay.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .session import Session
    from .state.pods import Job

RE_ARMING_ACTIONS = frozenset({"reclaim", "preempt", "consolidate"})
"""The actions a delay holds back, and whose evictions start it again."""


def in_preemption_delay(job: Job, clock: float, evicted_this_cycle: bool = False) -> bool:
    """Whether pending ``job`` may not trigger evictions at ``clock``; ``evicted_this_cycle``: one of those
    actions evicted a pod of it in the cycle under way (its record, and so ``last_evicted_at``, comes later)."""
    delay = job.preemption_delay
    if not delay:
        return False
    start = job.submitted_at
    if job.last_evicted_at is not None:
        start = max(start, job.last_evicted_at)
    if evicted_this_cycle:
        start = max(start, clock)
    return clock < start + delay


def held_back_by_delay(s: Session, job: Job) -> bool:
    """Whether reclaim, preempt or consolidate must pass over pending ``job`` in session ``s``."""
    return in_preemption_delay(job, s.clock, bool(s.evicted.get(job.name)))
