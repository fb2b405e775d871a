"""KAI's consolidation (§8): move running preemptible pods so that a pending job fits; nobody is killed.

Only preemptible pending jobs, and only when the cluster's free GPUs (idle,
releasing, free parts of shared devices, free MIG instances) could hold the job's GPUs at
all. Victims come from any queue at any priority; a scenario counts only if
every victim it evicts lands again. Min-runtime does not apply. A pending job
with a topology constraint must land inside one domain of it (§5.5, through the
solver), so consolidation may empty part of a domain to make room for a gang
that fits no domain as it stands; a moved victim lands inside one domain of
its own constraint again.
"""

from __future__ import annotations

from muster.tolerances import EPS

from ..capacity import limit_reason, quota_reason
from ..preemption_delay import held_back_by_delay
from ..session import Session
from ..state import Job
from . import solver
from .common import Request, each_pending, each_pending_with_victims, held_back, shape_key, waiting
from .victims import victim_order


class ConsolidateAction:
    """``walk`` is how the pending jobs are walked in order."""

    name = "consolidate"
    clock_dependent = True  # a job's preemption delay ends with time alone
    walk = staticmethod(each_pending)

    def run(self, s: Session) -> None:
        if self.passes_over(s):
            return
        each_pending_with_victims(s, lambda j: True, self._attempt, self.walk)

    def passes_over(self, s: Session) -> bool:
        """Whether no waiting job could get past the first tests of ``_attempt`` (so the walk, which would
        decide nothing and note no reason, is left out): none is held back by its delay, and each is not
        preemptible, passes a limit or quota, or asks for more GPUs than are
        free. Nothing changes while every attempt stops there, so what is read at the start holds."""
        w = waiting(s)
        if not w.jobs:
            return True
        for job, req in zip(w.jobs, w.requests, strict=True):
            if held_back(s, job):
                return False
            if may_move_others_for(s, job, req):
                return False
        return True

    def _attempt(
        self, s: Session, job: Job, pods: list[int], req: Request, running: dict, failed: set
    ) -> None:
        if held_back_by_delay(s, job):
            return
        if not may_move_others_for(s, job, req):
            return
        key = shape_key(s, job, pods)
        if key in failed:
            return
        by_leaf = {
            q: [(j, False) for j in jobs if j.name != job.name and s.victim_pods(j)]
            for q, jobs in running.items()
        }
        by_leaf = {q: v for q, v in by_leaf.items() if v}
        if not by_leaf:
            return
        sol = solver.solve(s, job, pods, victim_order(s, by_leaf), self.name, all_must_move=True)
        if sol is None:
            failed.add(key)
            return
        solver.commit(s, job, sol, lambda u: f"moved to make room for {job.name}")


def may_move_others_for(s: Session, job: Job, req: Request) -> bool:
    """Whether consolidation may move pods for ``job`` asking ``req``: it is preemptible, fits its limits (and quotas), and the free GPUs could hold what it asks for at all."""
    if not job.preemptible:
        return False
    if limit_reason(s, job, req) or quota_reason(s, job, req):
        return False
    return free_gpus(s) + EPS >= req[0]


def free_gpus(s: Session) -> float:
    """GPUs not held by running pods on served nodes (idle, releasing, free parts of shared devices, free MIG
    instances by their slices)."""
    return s.free_gpus()
