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


def delay_end(job: Job, clock: float, evicted_this_cycle: bool = False) -> float | None:
    """When pending ``job``'s delay ends (None: it has none); ``evicted_this_cycle``: one of those actions
    evicted a pod of it in the cycle under way at ``clock`` (its record, and so ``last_evicted_at``, comes
    later)."""
    delay = job.preemption_delay
    if not delay:
        return None
    start = job.submitted_at
    if job.last_evicted_at is not None:
        start = max(start, job.last_evicted_at)
    if evicted_this_cycle:
        start = max(start, clock)
    return start + delay


def in_preemption_delay(job: Job, clock: float, evicted_this_cycle: bool = False) -> bool:
    """Whether pending ``job`` may not trigger evictions at ``clock``."""
    end = delay_end(job, clock, evicted_this_cycle)
    return end is not None and clock < end


def held_back_by_delay(s: Session, job: Job) -> bool:
    """Whether reclaim, preempt or consolidate must pass over pending ``job`` in session ``s``; if so, its
    reason says until when (KAI's PreemptionDelayNotElapsed)."""
    end = delay_end(job, s.clock, bool(s.evicted.get(job.name)))
    if end is None or s.clock >= end:
        return False
    # worded here, not in reasons.py: that module reads the state, whose fold reads this one
    seconds = f"{job.preemption_delay:.2f}".rstrip("0").rstrip(".")
    # the clock is left out: a live one is wall time, and a reason that names it would not compare
    note = f"may not evict others until its preemption delay of {seconds}s has passed since its creation or last eviction"
    why = s.reasons.get(job.name)
    if not why:
        s.reasons[job.name] = note
    elif note not in why:
        s.reasons[job.name] = f"{why}; {note}"
    return True
