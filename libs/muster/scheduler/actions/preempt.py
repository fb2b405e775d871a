"""KAI's preempt action (§7): inside one leaf queue, a job displaces strictly lower-priority preemptible jobs.

Jobs still inside their preempt min-runtime are not victims (an elastic one
may still give pods above its minimum). A job at its queue's limit may
preempt: the solver counts limits after the evictions, which lower the
queue's allocation first. A job with a topology constraint preempts too: the
solver places it as allocate does, so victims are evicted only when one domain
of its required level then holds it.
"""

from __future__ import annotations

from ..capacity import quota_reason
from ..preemption_delay import held_back_by_delay
from ..session import Session
from ..state import Job
from . import solver
from .common import (
    Request,
    VictimSearch,
    held_back,
    lowest_running_priority,
    shape_key,
    waiting,
)
from .victims import protected, victim_order


class PreemptAction(VictimSearch):
    name = "preempt"

    def passes_over(self, s: Session) -> bool:
        """No waiting job is held back by its delay, and none shares its leaf queue with a running
        preemptible job of lower priority: there would be no victim for anyone."""
        w = waiting(s)
        if not w.jobs:
            return True
        lowest = lowest_running_priority(s)
        for job, leaf in zip(w.jobs, w.leaves, strict=True):
            if held_back(s, job):
                return False
            if lowest.get(leaf, job.priority) < job.priority:
                return False
        return True

    def _attempt(
        self, s: Session, job: Job, pods: list[int], req: Request, running: dict, failed: set
    ) -> None:
        if held_back_by_delay(s, job):
            return
        if quota_reason(s, job, req):
            return
        key = shape_key(s, job, pods)
        if key in failed:
            return
        leaf = s.table.index[job.queue]
        victims = [
            (j, protected(s, j, "preempt"))
            for j in running.get(leaf, [])
            if j.priority < job.priority and j.name != job.name and s.victim_pods(j)
        ]
        if not victims:
            failed.add(key)
            return
        sol = solver.solve(s, job, pods, victim_order(s, {leaf: victims}), self.name)
        if sol is None:
            failed.add(key)
            return
        solver.commit(
            s,
            job,
            sol,
            lambda u: (
                f"preempted for {job.name} (priority {job.priority} over {u.job.priority}) in queue {job.queue}"
            ),
        )
