"""KAI's hierarchical fair share (resource division), as a Numba kernel.

For each resource independently (gpu, cpu in millicores, memory in bytes),
the top-level queues divide the cluster total; each queue's resulting fair
share is then divided among its children by the same procedure:

1. deserved pass: every queue gets ``min(quota, requestable)`` (quota -1 =
   the whole amount being divided, requestable = ``min(request, limit)``),
   without clamping to what is left;
2. over-quota pass, only if something is left: priority groups from the
   highest, each dividing what the previous left, in rounds proportional to
   ``max(0, w + k (w - usage))`` (w = weight share among queues still
   wanting); a queue wanting more than its portion gets the portion rounded
   down and remembers the fraction;
3. remainder pass: per priority group, the remembered fractions largest
   first (then creation order) get ``min(1, left)`` each.

Queues must be given in creation order: the index breaks ties.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from muster.kernels.jit import njit

RESOURCES = ("gpu", "cpu", "memory")


class QueueArrays(NamedTuple):
    """One row per queue, in creation order; columns of the 2-D arrays are gpu, cpu, memory."""

    parent: np.ndarray  # int64[Q], -1 for a top-level queue
    priority: np.ndarray  # int64[Q]
    quota: np.ndarray  # float64[Q, 3], -1 = unlimited
    limit: np.ndarray  # float64[Q, 3], -1 = none
    weight: np.ndarray  # float64[Q, 3]
    request: np.ndarray  # float64[Q, 3]: allocated + pending of all descendants
    usage: np.ndarray  # float64[Q, 3]: historical usage / capacity, 0 without history


class QueueTree(NamedTuple):
    """Who divides among whom: the children of each queue in index order (CSR), and the top-level queues."""

    child_start: np.ndarray  # int64[Q + 1]: children of q are child_idx[child_start[q]:child_start[q + 1]]
    child_idx: np.ndarray  # int64[C]
    top: np.ndarray  # int64[T]


def fair_share(queues: QueueArrays, total: np.ndarray, k: float = 1.0) -> np.ndarray:
    """Fair share per queue and resource (float64[Q, 3]) of ``total`` (float64[3])."""
    queues = _contiguous(queues)
    n = queues.parent.shape[0]
    total = np.ascontiguousarray(total, dtype=np.float64)
    if total.shape != (3,):
        raise ValueError(f"total: expected shape (3,), got {total.shape}")
    out = np.zeros((n, 3), dtype=np.float64)
    _fair_share(_children(queues.parent), queues, total, float(k), out)
    return out


def _contiguous(queues: QueueArrays) -> QueueArrays:
    """``queues`` as the kernel reads them (contiguous, int64 and float64); raises ValueError naming a bad field."""
    parent = np.ascontiguousarray(queues.parent, dtype=np.int64)
    n = parent.shape[0]
    priority = np.ascontiguousarray(queues.priority, dtype=np.int64)
    arrays = {}
    for name in ("quota", "limit", "weight", "request", "usage"):
        a = np.ascontiguousarray(getattr(queues, name), dtype=np.float64)
        if a.shape != (n, 3):
            raise ValueError(f"queues.{name}: expected shape ({n}, 3), got {a.shape}")
        arrays[name] = a
    if priority.shape != (n,):
        raise ValueError(f"queues.priority: expected shape ({n},), got {priority.shape}")
    if n and (parent.min() < -1 or parent.max() >= n):
        raise ValueError("queues.parent: index out of range")
    return QueueArrays(parent=parent, priority=priority, **arrays)


def _children(parent: np.ndarray) -> QueueTree:
    """Children of each queue in index order (CSR), the top-level queues; rejects cycles."""
    n = parent.shape[0]
    bad = _find_cycle(parent)
    if bad >= 0:
        raise ValueError(f"queues.parent: cycle through queue index {bad}")
    inner = parent[parent >= 0]
    counts = np.bincount(inner, minlength=n) if inner.size else np.zeros(n, dtype=np.int64)
    child_start = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(counts, out=child_start[1:])
    # a stable sort by parent keeps siblings in index (creation) order
    child_idx = np.argsort(np.where(parent >= 0, parent, n), kind="stable")[: inner.size].astype(np.int64)
    top = np.flatnonzero(parent == -1).astype(np.int64)
    return QueueTree(child_start, child_idx, top)


@njit(cache=True)
def _find_cycle(parent):
    """A queue index on a parent cycle, or -1."""
    n = parent.shape[0]
    state = np.zeros(n, dtype=np.int8)  # 0 unseen, 1 on the current walk, 2 reaches the top
    for q in range(n):
        p = q
        while p != -1 and state[p] == 0:
            state[p] = 1
            p = parent[p]
        if p != -1 and state[p] == 1:
            return p
        p = q
        while p != -1 and state[p] == 1:
            state[p] = 2
            p = parent[p]
    return -1


@njit(cache=True)
def _fair_share(tree, queues, total, k, out):
    n = queues.priority.shape[0]
    top = tree.top
    # breadth-first: each queue divides its own fair share among its children once it is known
    pending = np.empty(n + 1, dtype=np.int64)
    head = 0
    tail = 0
    for r in range(3):
        _divide(top, total[r], r, queues, k, out)
    for i in range(top.shape[0]):
        pending[tail] = top[i]
        tail += 1
    while head < tail:
        q = pending[head]
        head += 1
        lo = tree.child_start[q]
        hi = tree.child_start[q + 1]
        if hi == lo:
            continue
        members = tree.child_idx[lo:hi]
        for r in range(3):
            _divide(members, out[q, r], r, queues, k, out)
        for i in range(members.shape[0]):
            pending[tail] = members[i]
            tail += 1


@njit(cache=True)
def _requestable(q, r, limit, request):
    if limit[q, r] == -1.0:
        return request[q, r]
    return min(limit[q, r], request[q, r])


@njit(cache=True)
def _remaining_requested(q, r, limit, request, out):
    req = _requestable(q, r, limit, request)
    if req < out[q, r]:
        return 0.0
    return req - out[q, r]


@njit(cache=True)
def _satisfied(q, r, limit, request, out):
    if request[q, r] <= out[q, r]:
        return True
    return limit[q, r] != -1.0 and limit[q, r] <= out[q, r]


@njit(cache=True)
def _divide(members, amount, r, queues, k, out):
    """Divide ``amount`` of resource r among ``members`` (siblings in creation order), adding to ``out``."""
    priority = queues.priority
    m = members.shape[0]
    left = amount
    for i in range(m):
        q = members[i]
        deserved = queues.quota[q, r]
        if deserved == -1.0:
            deserved = amount
        give = min(deserved, _requestable(q, r, queues.limit, queues.request))
        out[q, r] += give
        left -= give
    if left <= 0.0:
        return
    prios = np.unique(priority[members])[::-1]
    remainder = np.zeros(m, dtype=np.float64)
    has_remainder = np.zeros(m, dtype=np.bool_)
    for p in prios:
        left = _up_to_fair_share(members, p, left, r, queues, k, out, remainder, has_remainder)
    for p in prios:
        if left <= 0.0:
            break
        idx = np.empty(m, dtype=np.int64)
        cnt = 0
        for i in range(m):
            if has_remainder[i] and priority[members[i]] == p:
                idx[cnt] = i
                cnt += 1
        if cnt == 0:
            continue
        idx = idx[:cnt]
        # largest fraction first; members are in creation order and the sort is stable
        order = np.argsort(-remainder[idx], kind="mergesort")
        for j in range(cnt):
            if left == 0.0:
                break
            give = min(1.0, left)
            out[members[idx[order[j]]], r] += give
            left -= give


@njit(cache=True)
def _up_to_fair_share(members, p, left, r, queues, k, out, remainder, has_remainder):
    """The over-quota rounds of priority group p; returns what is left."""
    # the per-queue helpers take the arrays they read: the loops below run them per queue and round
    priority = queues.priority
    weight = queues.weight
    usage = queues.usage
    limit = queues.limit
    request = queues.request
    m = members.shape[0]
    share_w = np.zeros(m, dtype=np.float64)
    while True:
        another = False
        round_amount = left
        total_w = 0.0
        for i in range(m):
            q = members[i]
            if priority[q] == p and _remaining_requested(q, r, limit, request, out) > 0.0:
                total_w += weight[q, r]
        if total_w == 0.0:
            break
        w_sum = 0.0
        for i in range(m):
            q = members[i]
            share_w[i] = 0.0
            if priority[q] != p or _satisfied(q, r, limit, request, out):
                continue
            nw = weight[q, r] / total_w
            share_w[i] = max(0.0, nw + k * (nw - usage[q, r]))
            w_sum += share_w[i]
        if w_sum == 0.0:
            break
        for i in range(m):
            q = members[i]
            if priority[q] != p:
                continue
            if left == 0.0:
                break
            if _satisfied(q, r, limit, request, out):
                continue
            requested = _remaining_requested(q, r, limit, request, out)
            if weight[q, r] == 0.0:
                continue
            portion = round_amount * (share_w[i] / w_sum)
            give = 0.0
            if requested <= portion:
                give = requested
                has_remainder[i] = False
            else:
                floored = np.floor(portion)
                if floored > 0.0:
                    give = floored
                if portion - give > 0.0:
                    remainder[i] = portion - give
                    has_remainder[i] = True
            if give == 0.0:
                continue
            out[q, r] += give
            left -= give
            another = another or requested < portion
        if not another or left == 0.0:
            break
    return left
