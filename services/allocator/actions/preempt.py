"""KAI's preempt action (§7): inside one leaf queue, a job displaces strictly lower-priority preemptible jobs.

Jobs still inside their preempt min-runtime are not victims (an elastic one
may still give pods above its minimum). Limits hold after the evictions.
"""

from __future__ import annotations

from ..session import Session
from ..state import Job
from . import solver
from .common import (
    Request,
    VictimSearch,
    limit_reason,
    quota_reason,
    shape_key,
)
from .victims import protected, victim_order


class PreemptAction(VictimSearch):
    name = "preempt"

    def _attempt(
        self, s: Session, job: Job, pods: list[int], req: Request, running: dict, failed: set
    ) -> None:
        if job.topology is not None and job.topology.required:
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
        # evictions lowered the queue's allocation; moved victims take theirs back
        after = [row[:] for row in s.alloc]
        for vjob, pod, slot, *_ in sol.stmt.placements():
            if vjob is not job:
                acct = s.placed_accounting(vjob, pod, slot)
                for q in s.table.ancestors[s.table.index[vjob.queue]]:
                    for r in range(3):
                        after[q][r] += acct[r]
        if limit_reason(s, job, req, after):
            sol.stmt.discard()
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
