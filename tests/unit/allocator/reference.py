"""The reference loops the batch kernel is checked against: KAI's queue/job order popped job by job
from ``JobQueue``, with no kernel anywhere (the oracles of ``test_batch_equivalence``)."""

from __future__ import annotations

from muster.scheduler.actions.allocate import AllocateAction
from muster.scheduler.actions.common import Visit, job_order_key, pending_by_leaf, walk_in_order
from muster.scheduler.ordering import JobQueue
from muster.scheduler.session import Session
from muster.scheduler.state import Job


class ReferenceAllocate(AllocateAction):
    """Allocate popping one job at a time; a job that placed some pods and has more goes back in."""

    def run(self, s: Session) -> None:
        leaf_jobs = self.queued(s)
        if not leaf_jobs:
            return
        failed_shapes: dict[tuple, str] = {}
        requests: dict[str, tuple[list[int], tuple[float, float, float]]] = {}

        def to_place(job: Job) -> tuple[list[int], tuple[float, float, float]]:
            hit = requests.get(job.name)
            if hit is None:
                pods = s.pods_to_place(job)
                hit = requests[job.name] = (pods, s.request_of(job, pods))
            return hit

        order = JobQueue(s.shares, s.table.parent, leaf_jobs, job_order_key(s), lambda j: to_place(j)[1])
        while (job := order.pop()) is not None:
            pods, req = to_place(job)
            ok = bool(pods) and self._attempt(s, job, pods, req, failed_shapes)
            requests.pop(job.name, None)  # what it still has to place changed with the attempt
            order.done(job, ok and bool(s.pending_pods(job)))


def walk_reference(s: Session, fn: Visit) -> None:
    """``each_pending`` without the kernel, whatever ``batch.can_visit`` says."""
    leaf_jobs = pending_by_leaf(s)
    if leaf_jobs:
        walk_in_order(s, leaf_jobs, fn)


def reference(action: object) -> object:
    """The reference twin of one of the allocator's actions (an action with no kernel path is its own)."""
    if isinstance(action, AllocateAction):
        return ReferenceAllocate()
    if hasattr(action, "walk"):
        action.walk = walk_reference
    return action
