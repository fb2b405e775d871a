"""KAI's allocate action (§5): pending jobs in queue/job order, each placed whole in one statement or not at all."""

from __future__ import annotations

import numpy as np

from .. import batch, topology
from ..capacity import capacity_reason
from ..gang import pipeline_all
from ..session import Session
from ..state import Job
from ..statement import Statement
from .common import pending_by_leaf


class AllocateAction:
    """The loop runs in the batch kernel, which hands jobs it cannot try whole back to ``_attempt``."""

    name = "allocate"
    clock_dependent = False

    def run(self, s: Session) -> None:
        leaf_jobs = self.queued(s)
        if leaf_jobs:
            batch.allocate(s, leaf_jobs, self._attempt, {})

    @staticmethod
    def queued(s: Session) -> dict[int, list[Job]]:
        """Pending jobs by leaf queue, in name order; a job that cannot be queued gets its reason."""
        return pending_by_leaf(s, record=True)

    def _attempt(
        self,
        s: Session,
        job: Job,
        pods: list[int],
        req: tuple[float, float, float],
        failed_shapes: dict[tuple, str],
    ) -> bool:
        why = capacity_reason(s, job, req)
        if why is not None:
            s.reasons[job.name] = why
            return False
        # within one allocate pass resources only shrink, so a shape that found no room never will; but
        # pods placed later in the pass may meet a pod affinity, so those jobs are not remembered
        view = s.pod_affinity()
        shape = (job.pool, *topology.constraints_key(s, job), tuple(job.pods[i] for i in pods))
        cached = view is None or not view.constrained(job)
        why = failed_shapes.get(shape) if cached else None
        if why is not None:
            s.reasons[job.name] = why
            return False
        stmt = Statement(s)
        why = place_job(s, stmt, job, pods)
        if why is not None:
            if cached:
                failed_shapes[shape] = why
            s.reasons[job.name] = why
            return False
        placed = stmt.placements()
        stmt.commit(pipeline_all=pipeline_all(s, job, placed), placements=placed)
        s.reasons.pop(job.name, None)
        return True


def place_job(s: Session, stmt: Statement, job: Job, pods: list[int]) -> str | None:
    """Place all ``pods`` in the statement; None on success, else why not (the statement is then empty)."""
    if not topology.constrained(job):
        result = stmt.place(job, pods)
        if result.count == len(pods):
            return None
        stmt.discard()
        return s.no_fit(job, pods, result.count)

    def attempt(some: list[int], mask: np.ndarray | None, ranks: np.ndarray | None) -> int:
        cp = stmt.checkpoint()
        count = stmt.place(job, some, restrict=mask, ranks=ranks).count
        if count != len(some):
            stmt.rollback(cp)
        return count

    why = topology.place_in_topology(s, job, pods, attempt, stmt.checkpoint, stmt.rollback)
    if why is not None:
        stmt.discard()
    return why
