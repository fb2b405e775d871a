"""Which job a cycle tries next: KAI's queue order (§3.2) over the queue tree and job order (§3.1).

Jobs wait in a heap per leaf queue. Every queue that has waiting jobs below
it sits in its parent's heap, compared with its best descendant's head job;
popping walks the tree top-down, and after the attempt the path is updated
bottom-up, so shares that changed with the allocation re-order the queues.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Sequence

import numpy as np

from muster.kernels.jit import njit
from muster.tolerances import UNLIMITED

DRF_NO_SHARE_MULTIPLIER = 1000.0


@njit(cache=True, inline="always")
def job_order(neg_priority, elastic, submitted_at, tiebreak):
    """Job order inside a leaf queue (§3.1), smallest first: higher priority, then elastic state (below
    its minimum first), then older, then the tiebreak (the name; the batch kernel's index in name order)."""
    return (neg_priority, elastic, submitted_at, tiebreak)


@njit(cache=True, inline="always")
def queue_key(alloc, fair, quota, allocatable, total, neg_priority, req):
    """Criteria 1-6 of KAI's queue order (§3.2) for a queue about to run a job needing ``req``, from its
    rows (gpu, cpu, memory) of allocated, fair share, quota and allocatable (-1 = unlimited), smallest
    first: not over-utilised, within its deserved quota with the job, higher priority, not asking for a
    resource it has no share of, smaller dominant share with the job, then without it."""
    # written out per resource, not looped: this runs once per pop in the batch kernel
    a0, a1, a2 = alloc[0], alloc[1], alloc[2]
    w0, w1, w2 = a0 + req[0], a1 + req[1], a2 + req[2]
    q0, q1, q2 = quota[0], quota[1], quota[2]
    c0, c1, c2 = allocatable[0], allocatable[1], allocatable[2]
    over = fair[0] < a0 and fair[1] < a1 and fair[2] < a2
    beyond = (
        (q0 != UNLIMITED and (w0 == UNLIMITED or not w0 <= q0))
        or (q1 != UNLIMITED and (w1 == UNLIMITED or not w1 <= q1))
        or (q2 != UNLIMITED and (w2 == UNLIMITED or not w2 <= q2))
    )
    zero = (c0 == 0 and w0 > 0) or (c1 == 0 and w1 > 0) or (c2 == 0 and w2 > 0)
    # the dominant share reads an unlimited allocatable share as the cluster's total
    d0 = total[0] if c0 == UNLIMITED else c0
    d1 = total[1] if c1 == UNLIMITED else c1
    d2 = total[2] if c2 == UNLIMITED else c2
    m = DRF_NO_SHARE_MULTIPLIER
    with_job = max(
        0.0, w0 * m if d0 == 0 else w0 / d0, w1 * m if d1 == 0 else w1 / d1, w2 * m if d2 == 0 else w2 / d2
    )
    without = max(
        0.0, a0 * m if d0 == 0 else a0 / d0, a1 * m if d1 == 0 else a1 / d1, a2 * m if d2 == 0 else a2 / d2
    )
    return (1 if over else 0, 1 if beyond else 0, neg_priority, 1 if zero else 0, with_job, without)


@njit(cache=True, inline="always")
def smaller_share(a, b):
    """Criterion 7, between two queues' allocatable shares (unlimited = inf): 1 when ``a`` is <= ``b`` in
    every resource and ``b`` is not <= ``a``, -1 the other way round, 0 when neither is smaller."""
    a_le = a[0] <= b[0] and a[1] <= b[1] and a[2] <= b[2]
    b_le = b[0] <= a[0] and b[1] <= a[1] and b[2] <= a[2]
    if a_le == b_le:
        return 0
    return 1 if a_le else -1


_job_order = job_order.py_func
_queue_key = queue_key.py_func
_smaller_share = smaller_share.py_func


def job_key(priority: int, elastic: int, submitted_at: float, name: str) -> tuple:
    """``job_order`` of a job by its name, given its elastic state (``Session.elastic``)."""
    return _job_order(-priority, elastic, submitted_at, name)


class QueueShares:
    """The per-queue numbers queue order reads: quota (deserved), limit, fair share, allocated (live)."""

    def __init__(
        self,
        quota: np.ndarray,
        limit: np.ndarray,
        fair: np.ndarray,
        alloc: list[list[float]],
        priority: Sequence[int],
        total: np.ndarray,
    ) -> None:
        # plain lists: this is read once per queue per pop, where numpy scalars cost more than the math
        self.quota = quota.tolist()
        self.limit = limit.tolist()
        self.fair = fair.tolist()
        self.alloc = alloc
        self.priority = list(priority)
        self.total = [float(t) for t in total]
        self.allocatable = [
            [_allocatable(self.quota[q][r], self.fair[q][r], self.limit[q][r]) for r in range(3)]
            for q in range(len(self.quota))
        ]
        # allocatable with unlimited as infinity, for the partial order of criterion 7
        self.cap = [tuple(float("inf") if v == UNLIMITED else v for v in row) for row in self.allocatable]

    def sort_key(self, q: int, req: Sequence[float]) -> tuple:
        """``queue_key`` of queue q about to run a job needing ``req``."""
        return _queue_key(
            self.alloc[q],
            self.fair[q],
            self.quota[q],
            self.allocatable[q],
            self.total,
            -self.priority[q],
            req,
        )


def _allocatable(quota: float, fair: float, limit: float) -> float:
    # KAI returns the limit (usually unlimited) when the quota is unlimited
    if quota == UNLIMITED:
        return limit
    a = max(quota, fair)
    if limit != UNLIMITED:
        a = min(limit, a)
    return a


class _Entry:
    __slots__ = ("key", "cap", "q", "head")

    def __init__(self, key: tuple, cap: tuple[float, float, float], q: int, head: object) -> None:
        self.key = key
        self.cap = cap
        self.q = q
        self.head = head

    def __lt__(self, other: _Entry) -> bool:
        if self.key != other.key:
            return self.key < other.key
        smaller = _smaller_share(self.cap, other.cap)
        if smaller:
            return smaller > 0
        return self.q < other.q  # creation order


class JobQueue:
    """Jobs in KAI's order across the queue tree; ``pop`` the next, then ``done`` with it."""

    def __init__(
        self,
        shares: QueueShares,
        parent: Sequence[int],
        leaf_jobs: dict[int, list],
        job_key_fn: Callable[[object], tuple],
        job_request_fn: Callable[[object], Sequence[float]],
    ) -> None:
        self.shares = shares
        self.parent = parent
        self.key_of = job_key_fn
        self.request_of = job_request_fn
        n = len(parent)
        self.jobs: dict[int, list] = {}
        self.children: list[list[_Entry]] = [[] for _ in range(n)]
        self.root: list[_Entry] = []
        self._path: list[_Entry] = []
        for q in sorted(leaf_jobs):
            heap = [(self.key_of(j), j) for j in leaf_jobs[q]]
            if heap:
                heapq.heapify(heap)
                self.jobs[q] = heap
        # bottom-up: a queue enters its parent's heap once its own heap is ready
        depth = [0] * n
        for q in range(n):
            p, d = parent[q], 0
            while p >= 0:
                d += 1
                p = parent[p]
            depth[q] = d
        active = {q for q in self.jobs}
        for q in list(active):
            p = parent[q]
            while p >= 0 and p not in active:
                active.add(p)
                p = parent[p]
        for q in sorted(active, key=lambda q: -depth[q]):
            entry = self._entry(q)
            if entry is None:
                continue
            heap = self.root if parent[q] < 0 else self.children[parent[q]]
            heap.append(entry)
        for h in [self.root, *self.children]:
            heapq.heapify(h)

    def _head(self, q: int) -> object | None:
        if q in self.jobs:
            heap = self.jobs[q]
            return heap[0][1] if heap else None
        heap = self.children[q]
        return heap[0].head if heap else None

    def _entry(self, q: int) -> _Entry | None:
        head = self._head(q)
        if head is None:
            return None
        key = self.shares.sort_key(q, self.request_of(head))
        return _Entry(key, self.shares.cap[q], q, head)

    def pop(self) -> object | None:
        """The next job to try, or None when every job has been tried."""
        if not self.root:
            return None
        path = [self.root[0]]
        while path[-1].q not in self.jobs:
            path.append(self.children[path[-1].q][0])
        self._path = path
        return heapq.heappop(self.jobs[path[-1].q])[1]

    def done(self, job: object, again: bool) -> None:
        """After trying the popped job: ``again`` puts it back (it still has pods to place)."""
        path = self._path
        leaf = path[-1].q
        if again:
            heapq.heappush(self.jobs[leaf], (self.key_of(job), job))
        for i in range(len(path) - 1, -1, -1):
            q = path[i].q
            heap = self.root if i == 0 else self.children[path[i - 1].q]
            entry = self._entry(q)
            # the path entry is still the top of its parent's heap: nothing else moved
            if entry is None:
                heapq.heappop(heap)
            else:
                heapq.heapreplace(heap, entry)
        self._path = []
