"""KAI's consolidation (§8): move running preemptible pods so that a pending job fits; nobody is killed.

Only preemptible pending jobs, and only when the cluster's free GPUs (idle,
releasing, free parts of shared devices, free MIG instances) could hold the job's GPUs at
all. Victims come from any queue at any priority; a scenario counts only if
every victim it evicts lands again. Min-runtime does not apply.
"""

from __future__ import annotations

from muster.tolerances import EPS

from ..capacity import limit_reason, quota_reason
from ..preemption_delay import held_back_by_delay
from ..session import Session
from ..state import Job
from . import solver
from .common import Request, each_pending, each_pending_with_victims, shape_key
from .victims import victim_order


class ConsolidateAction:
    """``walk`` is how the pending jobs are walked in order."""

    name = "consolidate"
    clock_dependent = True  # a job's preemption delay ends with time alone
    walk = staticmethod(each_pending)

    def run(self, s: Session) -> None:
        movable = lambda j: not (j.topology is not None and j.topology.required)  # noqa: E731
        each_pending_with_victims(s, movable, self._attempt, self.walk)

    def _attempt(
        self, s: Session, job: Job, pods: list[int], req: Request, running: dict, failed: set
    ) -> None:
        if held_back_by_delay(s, job):
            return
        if not job.preemptible or (job.topology is not None and job.topology.required):
            return
        if limit_reason(s, job, req) or quota_reason(s, job, req):
            return
        if free_gpus(s) + EPS < req[0]:
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


def free_gpus(s: Session) -> float:
    """GPUs not held by running pods on served nodes (idle, releasing, free parts of shared devices, free MIG
    instances by their slices)."""
    return s.free_gpus()
