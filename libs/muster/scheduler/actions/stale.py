"""KAI's stale gang eviction (§10): a gang running below its minimum longer than the grace period loses all its pods.

A gang is stale while some pods run but fewer than min_available (with
sub-groups: some leaf below its own minimum), and none has finished. Staleness starts at the clock
of the first cycle that saw it (recorded in the state from CycleCompleted).
The grace is the job's own (KAI v0.17's per-PodGroup ``stalenessGracePeriod``)
when it has one, else the allocator's; a negative grace never evicts.
Preemptibility does not protect.
"""

from __future__ import annotations

from ..config import AllocatorConfig
from ..reasons import _num
from ..session import Session
from ..state import Job, is_stale
from ..statement import Eviction, Statement
from ..subgroup_tree import short_leaves


def _short(s: Session, job: Job) -> str:
    """What the gang lacks: its running pods against its minimum, or each leaf below its own."""
    if not job.subgroups:
        return f"{s.active(job)} of at least {job.min_available} pods running"
    leaves = short_leaves(job.tree, s.leaf_counts(job))
    return ", ".join(f"sub-group {name}: {n} of at least {need} pods running" for name, n, need in leaves)


def stale_grace(job: Job, config: AllocatorConfig) -> float:
    """Seconds ``job`` may run below its minimum before it is evicted: its own grace, else the allocator's."""
    return config.stale_gang_grace if job.stale_gang_grace is None else job.stale_gang_grace


class StaleGangEvictionAction:
    name = "stale_gang_eviction"
    clock_dependent = True

    def run(self, s: Session) -> None:
        state = s.state
        if not state.ledger.stale_candidates:
            return
        for name in sorted(state.ledger.stale_candidates):
            job = state.jobs[name]
            grace = stale_grace(job, s.config)
            if grace < 0 or name in s.placed or name in s.evicted or not is_stale(job):
                continue
            since = state.ledger.stale_since.get(name, s.clock)
            if s.clock - since < grace:
                continue
            pods = s.victim_pods(job)
            if not pods:
                continue
            why = Eviction(
                self.name,
                None,
                f"stale gang: {_short(s, job)} for {_num(s.clock - since)}s (grace {_num(grace)}s)",
            )
            stmt = Statement(s)
            for p in sorted(pods):
                stmt.evict(job, p, why)
            stmt.commit()
