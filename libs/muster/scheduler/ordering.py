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

from muster.tolerances import UNLIMITED

DRF_NO_SHARE_MULTIPLIER = 1000.0


def elastic_state(active: int, min_available: int) -> int:
    """0 below min_available, 1 exactly at it, 2 above it."""
    if active < min_available:
        return 0
    return 1 if active == min_available else 2


def job_key(priority: int, active: int, min_available: int, submitted_at: float, name: str) -> tuple:
    """Job order inside a leaf queue: priority, elastic state, age, name."""
    return (-priority, elastic_state(active, min_available), submitted_at, name)


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

    def dominant_share(self, q: int, extra: Sequence[float] | None = None) -> float:
        """max over resources of allocated (+ extra) / allocatable share (unlimited = cluster total)."""
        best = 0.0
        for r in range(3):
            a = self.alloc[q][r] + (extra[r] if extra is not None else 0.0)
            cap = self.allocatable[q][r]
            if cap == UNLIMITED:
                cap = self.total[r]
            value = a * DRF_NO_SHARE_MULTIPLIER if cap == 0 else a / cap
            best = max(best, value)
        return best

    def sort_key(self, q: int, req: Sequence[float]) -> tuple:
        """Criteria 1-6 of KAI's queue order for queue q about to run a job needing ``req``."""
        alloc = self.alloc[q]
        fair = self.fair[q]
        quota = self.quota[q]
        with_job = (alloc[0] + req[0], alloc[1] + req[1], alloc[2] + req[2])
        over_utilized = fair[0] < alloc[0] and fair[1] < alloc[1] and fair[2] < alloc[2]
        within_deserved = (
            _le(with_job[0], quota[0]) and _le(with_job[1], quota[1]) and _le(with_job[2], quota[2])
        )
        cap = self.allocatable[q]
        zero_share = (
            (cap[0] == 0 and with_job[0] > 0)
            or (cap[1] == 0 and with_job[1] > 0)
            or (cap[2] == 0 and with_job[2] > 0)
        )
        return (
            over_utilized,
            not within_deserved,
            -self.priority[q],
            zero_share,
            self.dominant_share(q, req),
            self.dominant_share(q),
        )


def _allocatable(quota: float, fair: float, limit: float) -> float:
    # KAI returns the limit (usually unlimited) when the quota is unlimited
    if quota == UNLIMITED:
        return limit
    a = max(quota, fair)
    if limit != UNLIMITED:
        a = min(limit, a)
    return a


def _le(a: float, b: float) -> bool:
    """a <= b where -1 means unlimited."""
    if a == UNLIMITED:
        return b == UNLIMITED
    return b == UNLIMITED or a <= b


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
        # smaller allocatable share: <= in all and < in one
        a, b = self.cap, other.cap
        a_le = a[0] <= b[0] and a[1] <= b[1] and a[2] <= b[2]
        b_le = b[0] <= a[0] and b[1] <= a[1] and b[2] <= a[2]
        if a_le != b_le:
            return a_le
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
