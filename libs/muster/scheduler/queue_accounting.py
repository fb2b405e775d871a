"""A cycle's opening figures per queue: the queue tree as arrays, what each queue holds and asks for
(summed up the tree), its past use, and its fair share. Each is a step of its own that a session runs
when it opens; none writes to the state."""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from muster import events as ev
from muster.kernels import fairshare
from muster.kernels.share import MEMORY, device_share

from .config import FairnessConfig
from .state import ClusterState, decayed_seconds
from .state.queue_sums import A_CPU, A_GPU, A_MEM, NP_CPU, NP_GPU, NP_MEM, R_CPU, R_GPU, R_GPU_MEM, R_MEM

RESOURCES = ("gpu", "cpu", "memory")


@dataclass
class QueueTable:
    """The queue tree as arrays, in creation order (``order``, then name)."""

    names: list[str]
    index: dict[str, int]
    parent: np.ndarray
    children: list[list[int]]
    priority: list[int]
    quota: np.ndarray
    limit: np.ndarray
    weight: np.ndarray
    ancestors: list[list[int]]  # the queue itself, then up to its top-level queue

    @classmethod
    def build(cls, queues: dict[str, ev.QueueSpec]) -> QueueTable:
        specs = sorted(queues.values(), key=lambda s: (s.order, s.name))
        names = [s.name for s in specs]
        index = {n: i for i, n in enumerate(names)}
        q = len(names)
        parent = np.full(q, -1, dtype=np.int64)
        quota = np.zeros((q, 3))
        limit = np.zeros((q, 3))
        weight = np.zeros((q, 3))
        for i, s in enumerate(specs):
            # an unknown parent leaves the queue at the top level (the queue controller rejects it)
            if s.parent is not None and s.parent in index and s.parent != s.name:
                parent[i] = index[s.parent]
            for r, res in enumerate(RESOURCES):
                spec = s.resources.get(res)
                if spec is None:
                    spec = ev.QueueResource(
                        quota=0.0 if res == "gpu" else -1.0, over_quota_weight=1.0, limit=-1.0
                    )
                quota[i, r] = spec.quota
                limit[i, r] = spec.limit
                weight[i, r] = spec.over_quota_weight
        # break parent cycles so the tree is a forest
        for i in range(q):
            seen = {i}
            p = parent[i]
            while p >= 0:
                if p in seen:
                    parent[i] = -1
                    break
                seen.add(int(p))
                p = parent[p]
        children: list[list[int]] = [[] for _ in range(q)]
        for i in range(q):
            if parent[i] >= 0:
                children[parent[i]].append(i)
        ancestors = []
        for i in range(q):
            chain = [i]
            while parent[chain[-1]] >= 0:
                chain.append(int(parent[chain[-1]]))
            ancestors.append(chain)
        return cls(
            names, index, parent, children, [s.priority for s in specs], quota, limit, weight, ancestors
        )


class QueueAccounting(NamedTuple):
    """Per queue, in ``QueueTable`` order, over its whole subtree: allocated, of that non-preemptible,
    requested (allocated plus pending)."""

    alloc: list[list[float]]
    alloc_np: list[list[float]]
    request: np.ndarray


def queue_accounting(
    by_queue: dict[str, list[float]], table: QueueTable, min_dev_mem: int
) -> QueueAccounting:
    """Each queue's running sums (``QueueSums``) added up the tree; a pending gpu-memory pod asks for its
    memory over the smallest device's."""
    q = len(table.names)
    # plain floats, added in the same order as arrays would be (the same sums): a cycle opens with this,
    # and numpy's per-call cost on rows of three is most of it
    alloc = [[0.0, 0.0, 0.0] for _ in range(q)]
    alloc_np = [[0.0, 0.0, 0.0] for _ in range(q)]
    request = [[0.0, 0.0, 0.0] for _ in range(q)]
    for name, s in by_queue.items():
        i = table.index.get(name)
        if i is None:
            continue
        gpu_mem_req = max(device_share.py_func(MEMORY, 0.0, s[R_GPU_MEM], min_dev_mem), 0.0)
        a_gpu, a_cpu, a_mem = s[A_GPU], s[A_CPU], s[A_MEM]
        np_gpu, np_cpu, np_mem = s[NP_GPU], s[NP_CPU], s[NP_MEM]
        r_gpu, r_cpu, r_mem = a_gpu + s[R_GPU] + gpu_mem_req, a_cpu + s[R_CPU], a_mem + s[R_MEM]
        for anc in table.ancestors[i]:
            row = alloc[anc]
            row[0] += a_gpu
            row[1] += a_cpu
            row[2] += a_mem
            row = alloc_np[anc]
            row[0] += np_gpu
            row[1] += np_cpu
            row[2] += np_mem
            row = request[anc]
            row[0] += r_gpu
            row[1] += r_cpu
            row[2] += r_mem
    # sums kept incrementally drift by float rounding; KAI's are exact
    # lists, not arrays: the allocate loop reads and charges them one element at a time
    shape = (q, 3)
    return QueueAccounting(
        np.round(np.array(alloc, dtype=np.float64).reshape(shape), 9).tolist(),
        np.round(np.array(alloc_np, dtype=np.float64).reshape(shape), 9).tolist(),
        np.round(np.array(request, dtype=np.float64).reshape(shape), 9),
    )


def usage_fractions(
    state: ClusterState, fairness: FairnessConfig | None, table: QueueTable, clock: float, total: np.ndarray
) -> np.ndarray:
    """Each queue's decayed historical usage as a fraction of the cluster's decayed capacity over the
    window (KAI's time-aware fairness, normalised by total capacity); zeros when fairness is off, or
    while the window is empty (just reset, or a tumbling start still ahead)."""
    q = len(table.names)
    usage = np.zeros((q, 3))
    f = fairness
    if f is None:
        return usage
    since = f.window.since(clock)
    raw = state.queue_usage(clock, since, f.half_life)
    capacity_seconds = decayed_seconds(clock, since, f.half_life, since, clock)
    for name in sorted(raw):
        i = table.index.get(name)
        if i is None:
            continue
        for anc in table.ancestors[i]:
            usage[anc] += raw[name]
    for r in range(3):
        denom = total[r] * capacity_seconds
        usage[:, r] = usage[:, r] / denom if denom > 0 else 0.0
    return np.minimum(usage, 1.0)


def fair_shares(
    table: QueueTable,
    request: np.ndarray,
    usage: np.ndarray,
    total: np.ndarray,
    fairness: FairnessConfig | None,
) -> np.ndarray:
    """Each queue's fair share of ``total`` (queues by rows, resources by columns), as KAI divides it."""
    return fairshare.fair_share(
        fairshare.QueueArrays(
            parent=table.parent,
            priority=np.array(table.priority, dtype=np.int64),
            quota=table.quota,
            limit=table.limit,
            weight=table.weight,
            request=request,
            usage=usage,
        ),
        total,
        k=fairness.k if fairness is not None else 1.0,
    )
