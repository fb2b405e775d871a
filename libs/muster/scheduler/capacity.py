"""KAI's capacity rules (its ``capacity_policy``), the one place that says whether a job fits its queues.

A request fits when, at its leaf queue and every ancestor, it would take no
resource past the queue's limit, and, for a job that may not be preempted,
past the queue's quota counted over non-preemptible jobs only (§5.2). A
resource the job does not ask for never blocks it, an unset limit or quota
(``UNLIMITED``) never does, and ``EPS`` absorbs float sums that land one ulp
over. Reclaim reads the over-quota side: whether a queue holds more than a
share, and whether a request stays within one.

``first_exceeded`` is jitted so the batch kernel calls it compiled; Python
callers run the same source through its ``py_func`` on the session's plain
lists, which a compiled call would first have to copy into arrays.
"""

from __future__ import annotations

from collections.abc import Sequence

from muster.kernels.jit import njit
from muster.tolerances import EPS, UNLIMITED

from . import reasons
from .session import QueueTable, Session
from .state import Job

Request = Sequence[float]


@njit(cache=True, inline="always")
def first_exceeded(chain, cap, used, req):
    """(queue, resource) of the first queue in ``chain`` where ``req`` on top of ``used`` would pass
    ``cap`` (rows per queue: gpu, cpu, memory); (-1, -1) when it fits everywhere."""
    for q in chain:
        for r in range(3):
            c = cap[q][r]
            if c != UNLIMITED and req[r] != 0 and used[q][r] + req[r] > c + EPS:
                return q, r
    return -1, -1


_first_exceeded = first_exceeded.py_func


def over_limit(
    s: Session, chain: Sequence[int], req: Request, alloc: Sequence[Sequence[float]]
) -> tuple[int, int]:
    """(queue, resource) of the first limit in ``chain`` that ``req`` would pass on top of ``alloc``."""
    return _first_exceeded(chain, s.shares.limit, alloc, req)


def limit_reason(
    s: Session, job: Job, req: Request, alloc: Sequence[Sequence[float]] | None = None
) -> str | None:
    """Why ``req`` does not fit under a limit at the job's leaf or an ancestor, on top of ``alloc``
    (default: the queues' allocation now); None when it fits."""
    table = s.table
    alloc = s.alloc if alloc is None else alloc
    q, r = over_limit(s, table.ancestors[table.index[job.queue]], req, alloc)
    if q < 0:
        return None
    return over_limit_text(table, q, r, alloc[q][r], req[r])


def quota_reason(s: Session, job: Job, req: Request) -> str | None:
    """For a non-preemptible job, why ``req`` does not fit under a quota at its leaf or an ancestor
    (counted over non-preemptible jobs); None when it fits or the job may be preempted."""
    if job.preemptible:
        return None
    table = s.table
    q, r = _first_exceeded(table.ancestors[table.index[job.queue]], s.shares.quota, s.alloc_np, req)
    if q < 0:
        return None
    return over_quota_text(table, q, r, s.alloc_np[q][r], req[r])


def over_limit_text(table: QueueTable, q: int, r: int, used: float, want: float) -> str:
    """The pending reason for a request of ``want`` over queue q's limit of resource r, ``used`` in use."""
    return reasons.over_limit(table.names[q], r, table.limit[q, r], used, want)


def over_quota_text(table: QueueTable, q: int, r: int, used_np: float, want: float) -> str:
    """The pending reason for a non-preemptible request over queue q's quota (``used_np``: non-preemptible)."""
    return reasons.non_preemptible_over_quota(table.names[q], r, table.quota[q, r], used_np, want)


def capacity_reason(s: Session, job: Job, req: Request) -> str | None:
    """Why ``req`` does not fit the job's queues now: a limit first, then (non-preemptible) a quota."""
    return limit_reason(s, job, req) or quota_reason(s, job, req)


def holds_over(cap: float, used: float) -> bool:
    """Whether a queue holding ``used`` is over ``cap`` (a fair share or quota; never when unlimited)."""
    return cap != UNLIMITED and used > cap + EPS


def stays_within(cap: float, used: float, want: float) -> bool:
    """Whether ``want`` more on top of ``used`` stays within ``cap`` (always when unlimited)."""
    return cap == UNLIMITED or used + want <= cap + EPS
