"""What the actions after allocate share: the pending jobs in queue/job order, running jobs by leaf queue."""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from .. import batch, reasons, topology
from ..ordering import JobQueue, job_key
from ..preemption_delay import in_preemption_delay
from ..session import Session
from ..state import Job

Request = tuple[float, float, float]


def pending_by_leaf(s: Session, record: bool = False) -> dict[int, list[Job]]:
    """Pending jobs that may be placed, by leaf queue index, in name order; with ``record``, a job that
    cannot be queued gets its reason."""
    table = s.table
    jobs, index, children = s.state.jobs, table.index, table.children
    leaf_jobs: dict[int, list[Job]] = {}
    for name in s.state.ledger.sorted_pending():
        job = jobs[name]
        q = index.get(job.queue)
        if q is not None and not children[q] and (job.shape >= 0 or not any(p.invalid for p in job.pods)):
            leaf = leaf_jobs.get(q)
            if leaf is None:
                leaf = leaf_jobs[q] = []
            leaf.append(job)
        elif record:
            s.reasons[name] = why_not_queued(job, q, children)
    return leaf_jobs


def why_not_queued(job: Job, q: int | None, children) -> str:
    """Why a pending job cannot wait in a leaf queue: its queue is unknown or not a leaf, or a pod of it
    is invalid (a job with a shape has only valid pods)."""
    if q is None:
        return reasons.unknown_queue(job.queue)
    if children[q]:
        return reasons.not_leaf(job.queue)
    return reasons.invalid_pod(next(p.invalid for p in job.pods if p.invalid))


Visit = Callable[[Job, list[int], Request], None]


def each_pending(s: Session, fn: Visit) -> None:
    """``fn(job, pods, request)`` for every job with pods to place, each once, in KAI's queue/job order as
    it stands when the job's turn comes: in the batch kernel when that gives the same order, otherwise
    with ``walk_in_order``."""
    leaf_jobs = pending_by_leaf(s)
    if not leaf_jobs:
        return
    if batch.can_visit(s, leaf_jobs):
        batch.visit(s, leaf_jobs, fn)
        return
    walk_in_order(s, leaf_jobs, fn)


def walk_in_order(s: Session, leaf_jobs: dict[int, list[Job]], fn: Visit) -> None:
    """``each_pending`` over ``leaf_jobs`` popping a ``JobQueue``, each job once."""
    order, to_place = pending_order(s, leaf_jobs)
    assert order is not None
    while (job := order.pop()) is not None:
        pods, req = to_place(job)
        if pods:
            fn(job, pods, req)
        order.done(job, False)


def job_order_key(s: Session) -> Callable[[Job], tuple]:
    """``ordering.job_key`` of a job as it stands in session ``s``."""
    return lambda j: job_key(j.priority, s.elastic(j), j.submitted_at, j.name)


def pending_order(
    s: Session, leaf_jobs: dict[int, list[Job]] | None = None
) -> tuple[JobQueue | None, Callable[[Job], tuple[list[int], Request]]]:
    """Jobs that still have pods to place, in KAI's queue/job order, and their pods-to-place with request."""
    table = s.table
    if leaf_jobs is None:
        leaf_jobs = pending_by_leaf(s)
    requests: dict[str, tuple[list[int], Request]] = {}

    def to_place(job: Job) -> tuple[list[int], Request]:
        hit = requests.get(job.name)
        if hit is None:
            pods = s.pods_to_place(job)
            hit = requests[job.name] = (pods, s.request_of(job, pods))
        return hit

    if not leaf_jobs:
        return None, to_place
    order = JobQueue(
        s.shares,
        table.parent,
        leaf_jobs,
        job_order_key(s),
        lambda j: to_place(j)[1],
    )
    return order, to_place


def running_by_leaf(s: Session, keep: Callable[[Job], bool]) -> dict[int, list[Job]]:
    """Preemptible jobs with pods that could be evicted now, by leaf queue index."""
    out: dict[int, list[Job]] = {}
    table = s.table
    jobs = s.state.jobs
    for name in sorted(s.state.ledger.running_jobs):
        job = jobs[name]
        if not job.preemptible or not keep(job):
            continue
        q = table.index.get(job.queue)
        if q is not None:
            out.setdefault(q, []).append(job)
    return out


def each_pending_with_victims(
    s: Session,
    keep: Callable[[Job], bool],
    attempt: Callable[[Session, Job, list[int], Request, dict, set], None],
    walk: Callable[[Session, Visit], None] = each_pending,
) -> None:
    """``attempt(s, job, pods, request, running, failed)`` for each pending job with pods to place, while
    some preemptible job that ``keep`` admits runs (``running``: those jobs by leaf queue).

    The running jobs are gathered only when a job still has pods to place: after allocate has placed
    everything, which is the common case, nothing running is looked at.
    """
    if not s.state.ledger.running_jobs:
        return
    running: dict[int, list[Job]] | None = None
    failed: set[tuple] = set()

    def visit(job: Job, pods: list[int], req: Request) -> None:
        nonlocal running
        if running is None:
            running = running_by_leaf(s, keep)
        if running:
            attempt(s, job, pods, req, running, failed)

    walk(s, visit)


class Waiting(NamedTuple):
    """The jobs ``each_pending`` would hand an action now (pending, in a leaf queue, with pods to place),
    in no particular order: each with its leaf queue and the request of its pods to place."""

    jobs: list[Job]
    leaves: list[int]
    requests: list[Request]


def waiting(s: Session) -> Waiting:
    """The jobs a walk over the pending jobs would visit now; worked out once until the next decision,
    so the actions after allocate share it."""
    return s.until_next_decision("waiting", lambda: _waiting(s))


def _waiting(s: Session) -> Waiting:
    out = Waiting([], [], [])
    placed, evicted = s.placed, s.evicted
    whole_of_shape: dict[int, Request] = {}
    for q, jobs in pending_by_leaf(s).items():
        for job in jobs:
            name = job.name
            plain = job.shape >= 0 and job.n_pending == len(job.pods) and name not in evicted
            mine = placed.get(name)
            if plain and mine is not None and len(mine) == len(job.pods):
                continue  # a plain job is placed all at once: this one has nothing left to place
            if plain and mine is None:
                # untouched, a plain job asks for all its pods, as every job of its shape does
                req = whole_of_shape.get(job.shape)
                if req is None:
                    req = whole_of_shape[job.shape] = s.request_of(job, list(range(len(job.pods))))
            else:
                pods = s.pods_to_place(job)
                if not pods:
                    continue
                req = s.request_of(job, pods)
            out.jobs.append(job)
            out.leaves.append(q)
            out.requests.append(req)
    return out


def held_back(s: Session, job: Job) -> bool:
    """Whether the job's preemption delay holds it back (``held_back_by_delay`` without noting why): the
    first test of every attempt to evict for it, which notes the reason, so an action that would reach
    it must not be passed over."""
    return in_preemption_delay(job, s.clock, bool(s.evicted.get(job.name)))


def lowest_running_priority(s: Session) -> dict[int, int]:
    """The lowest priority of a preemptible job with running pods, by leaf queue index."""

    def build() -> dict[int, int]:
        out: dict[int, int] = {}
        index, jobs = s.table.index, s.state.jobs
        for name in s.state.ledger.running_jobs:
            job = jobs[name]
            q = index.get(job.queue)
            if job.preemptible and q is not None and job.priority < out.get(q, job.priority + 1):
                out[q] = job.priority
        return out

    return s.until_next_decision("lowest_running_priority", build)


def shape_key(s: Session, job: Job, pods: list[int]) -> tuple:
    """What decides whether evicting others can make room for ``pods`` of ``job``: jobs alike in it share
    a failed search within one action's walk (``topology.constraints_key`` says what of a constrained
    job's placement is its own)."""
    return (
        job.queue,
        job.pool,
        job.priority,
        tuple(job.pods[i] for i in pods),
        *topology.constraints_key(s, job),
    )


class VictimSearch:
    """What reclaim and preempt share: while some job runs, walk the pending jobs and try each.

    Subclasses give ``name`` and ``_attempt``, and may give ``passes_over``; ``walk`` is how the pending
    jobs are walked in order.
    """

    name = ""
    clock_dependent = True
    walk = staticmethod(each_pending)

    def run(self, s: Session) -> None:
        if self.passes_over(s):
            return
        each_pending_with_victims(s, lambda j: True, self._attempt, self.walk)

    def passes_over(self, s: Session) -> bool:
        """Whether no waiting job could get past the first tests of ``_attempt`` (so the walk would decide
        nothing and note no reason, and is left out): a cheap test of the action's own conditions."""
        return False

    def _attempt(
        self, s: Session, job: Job, pods: list[int], req: Request, running: dict, failed: set
    ) -> None:
        raise NotImplementedError
