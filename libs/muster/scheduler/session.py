"""One cycle's working state: fair shares, working copies of the node arrays, tentative placements.

A session never writes to ``ClusterState``; what it decides leaves only as
events in ``decisions``. Queue sums, fair shares and the node arrays are
copied at open, updated by each committed statement, thrown away at close.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from muster import events as ev
from muster.kernels import fairshare
from muster.kernels import placement as pl

from .config import AllocatorConfig
from .ordering import QueueShares
from .policy_placement import PolicyPlacer, is_policy, typical_shapes
from .state import ALLOCATED, PENDING, ClusterState, Job, decayed_seconds, gpu_accounting, planes
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


class Session:
    """Fair shares and working state for one cycle of one allocator."""

    def __init__(
        self,
        state: ClusterState,
        config: AllocatorConfig,
        table: QueueTable,
        clock: float,
        cycle: int,
        epoch: int,
        pool_label: str,
    ) -> None:
        self.state = state
        self.config = config
        self.table = table
        self.clock = clock
        self.cycle = cycle
        self.epoch = epoch
        self.pool_label = pool_label
        q = len(table.names)
        self.min_dev_mem = state.node_table.min_device_memory()
        self.total = state.node_table.totals()
        alloc = np.zeros((q, 3))
        alloc_np = np.zeros((q, 3))
        request = np.zeros((q, 3))
        for name, s in state.queue_sums.by_queue.items():
            i = table.index.get(name)
            if i is None:
                continue
            gpu_mem_req = s[R_GPU_MEM] / self.min_dev_mem if self.min_dev_mem else 0.0
            row_a = (s[A_GPU], s[A_CPU], s[A_MEM])
            row_np = (s[NP_GPU], s[NP_CPU], s[NP_MEM])
            row_r = (s[A_GPU] + s[R_GPU] + gpu_mem_req, s[A_CPU] + s[R_CPU], s[A_MEM] + s[R_MEM])
            for anc in table.ancestors[i]:
                alloc[anc] += row_a
                alloc_np[anc] += row_np
                request[anc] += row_r
        # sums kept incrementally drift by float rounding; KAI's are exact
        # lists, not arrays: the allocate loop reads and charges them one element at a time
        self.alloc: list[list[float]] = np.round(alloc, 9).tolist()
        self.alloc_np: list[list[float]] = np.round(alloc_np, 9).tolist()
        self.request = np.round(request, 9)
        self.fair = fairshare.fair_share(
            fairshare.QueueArrays(
                parent=table.parent,
                priority=np.array(table.priority, dtype=np.int64),
                quota=table.quota,
                limit=table.limit,
                weight=table.weight,
                request=self.request,
                usage=self._usage(state, config, table, clock),
            ),
            self.total,
            k=config.fairness.k if config.fairness is not None else 1.0,
        )
        self.shares = QueueShares(table.quota, table.limit, self.fair, self.alloc, table.priority, self.total)
        state.node_table.rerank()
        a = state.node_table.arrays
        self.nodes = pl.NodeArrays(a.ints.copy(), a.dev.copy(), a.ext.copy())
        self.in_scope = state.node_table.served_mask()
        self.slot_names = state.node_table.slot_names
        self._gpu_index: pl.GpuIndex | None = None
        self._placer: PolicyPlacer | None = None
        self.nodes_version = 0
        """Bumped by every change to ``nodes`` (placements, their undoing, evictions)."""
        self.alloc_version = 0
        """Bumped by every change to ``alloc`` and ``alloc_np``."""
        self._free_gpus = (-1, 0.0)
        self._eligible: dict[tuple, np.ndarray] = {}
        self._pod_arrays: dict[tuple, pl.PodArrays] = {}
        self.decisions: list[ev.BindRequested | ev.EvictionRequested] = []
        self.reasons: dict[str, str] = {}
        # pods placed in this session: job -> {pod index: (slot, devices, share, pipelined)}
        self.placed: dict[str, dict[int, tuple[int, tuple[int, ...], float, bool]]] = {}
        # pods evicted in this session (a moved pod is in both)
        self.evicted: dict[str, set[int]] = {}

    def _usage(
        self, state: ClusterState, config: AllocatorConfig, table: QueueTable, clock: float
    ) -> np.ndarray:
        """Each queue's decayed historical usage as a fraction of the cluster's decayed capacity over the
        window (KAI's time-aware fairness, normalised by total capacity); zeros when fairness is off."""
        q = len(table.names)
        usage = np.zeros((q, 3))
        f = config.fairness
        if f is None:
            return usage
        raw = state.queue_usage(clock, f.usage_window, f.half_life)
        capacity_seconds = decayed_seconds(clock, f.usage_window, f.half_life, clock - f.usage_window, clock)
        for name in sorted(raw):
            i = table.index.get(name)
            if i is None:
                continue
            for anc in table.ancestors[i]:
                usage[anc] += raw[name]
        for r in range(3):
            denom = self.total[r] * capacity_seconds
            usage[:, r] = usage[:, r] / denom if denom > 0 else 0.0
        return np.minimum(usage, 1.0)

    # -- what a job has and wants ---------------------------------------------------------------

    def active(self, job: Job, subgroup: str | None = None) -> int:
        """Pods of the job binding, bound or pipelined, counting this session's placements."""
        placed = self.placed.get(job.name, {})
        evicted = self.evicted.get(job.name, ())
        if subgroup is None:
            return job.n_active - len(evicted) + len(placed)
        count = 0
        for i, req in enumerate(job.pods):
            if req.subgroup == subgroup and ((job.state[i] in (1, 2, 3) and i not in evicted) or i in placed):
                count += 1
        return count

    def victim_pods(self, job: Job) -> list[int]:
        """Pods of the job that may be evicted now (binding or bound, untouched this session), newest index first."""
        placed = self.placed.get(job.name, {})
        evicted = self.evicted.get(job.name, ())
        return [
            i
            for i in range(len(job.pods) - 1, -1, -1)
            if job.state[i] in ALLOCATED and i not in evicted and i not in placed and job.node[i] >= 0
        ]

    def shift(self, job: Job, i: int, sign: int) -> None:
        """Evict (sign 1) pod i of a running job in the working arrays, or undo that (sign -1): its
        resources move between the used and releasing planes and leave (or re-enter) its queue's sums."""
        slot = job.node[i]
        req = job.pods[i]
        planes.move(self.nodes, self.state.node_table.ext_names, req, slot, job.gpus[i], job.share[i], sign)
        if req.kind != pl.CPU_ONLY and self._gpu_index is not None:
            pl.rebucket(self.nodes, self._gpu_index, slot)
        self.nodes_version += 1
        self.charge(job, job.acct[i], -sign)
        if sign > 0:
            self.evicted.setdefault(job.name, set()).add(i)
        else:
            self.evicted[job.name].discard(i)

    def pending_pods(self, job: Job) -> list[int]:
        placed = self.placed.get(job.name, {})
        return [i for i, s in enumerate(job.state) if s == PENDING and i not in placed]

    def pods_to_place(self, job: Job) -> list[int]:
        """The missing pods of every gang below min_available, or else one more pod (§5.1)."""
        pending = self.pending_pods(job)
        if not pending:
            return []
        if not job.subgroups:
            missing = job.min_available - self.active(job)
            return pending[: max(missing, 1)]
        groups = sorted({req.subgroup for req in job.pods})
        wanted: list[int] = []
        for g in groups:
            need = job.subgroups.get(g, 0) - self.active(job, g)
            if need > 0:
                wanted.extend([i for i in pending if job.pods[i].subgroup == g][:need])
        if wanted or any(job.subgroups.get(g, 0) > self.active(job, g) for g in groups):
            return sorted(wanted)
        return pending[:1]

    def request_of(self, job: Job, pods: list[int]) -> tuple[float, float, float]:
        """Queue-accounting request of ``pods`` before placement (gpu-memory pods by the smallest device)."""
        gpu = cpu = mem = 0.0
        for i in pods:
            req = job.pods[i]
            if req.gpu_memory:
                gpu += req.gpu_memory / self.min_dev_mem if self.min_dev_mem else 0.0
            else:
                gpu += req.gpu
            cpu += req.cpu
            mem += req.memory
        return (gpu, cpu, mem)

    # -- nodes ----------------------------------------------------------------------------------

    def eligible(self, job: Job, spec_key: tuple) -> np.ndarray:
        """Node slots the job's pods of ``spec_key`` may use: served, same pool, schedulable, matching."""
        key = (job.pool, spec_key)
        mask = self._eligible.get(key)
        if mask is None:
            mask = self._eligible[key] = self.state.node_table.eligible(job.pool, spec_key)
        return mask

    def free_gpus(self) -> float:
        """GPU devices not held by running pods on served nodes (idle, releasing, free parts of shared
        devices); remembered until the working arrays change."""
        version, value = self._free_gpus
        if version != self.nodes_version:
            ints, dev = self.nodes.ints, self.nodes.dev
            free = ints[:, pl.N_GPUS] - dev[pl.D_USED].sum(axis=1)
            value = float(np.sum(free[self.in_scope]))
            self._free_gpus = (self.nodes_version, value)
        return value

    def gpu_index(self) -> pl.GpuIndex:
        if self._gpu_index is None:
            # under a placement policy, binpack places what the policy cannot (see policy_placement)
            strategy = self.config.placement_gpu if self.config.placement_gpu in pl.STRATEGIES else "binpack"
            self._gpu_index = pl.build_gpu_index(self.nodes, self.in_scope, strategy)
        return self._gpu_index

    def policy_placer(self) -> PolicyPlacer | None:
        """The placer of GPU pods when ``placement_gpu`` names a placement policy (else None), its view in
        step with the working arrays."""
        if not is_policy(self.config.placement_gpu):
            return None
        if self._placer is None:
            shapes = typical_shapes(self.state, self.min_dev_mem)
            self._placer = PolicyPlacer(self.config.placement_gpu, self.nodes, self.gpu_index(), shapes)
        self._placer.sync(self.nodes, self.nodes_version)
        return self._placer

    def pod_arrays(
        self,
        job: Job,
        pods: list[int],
        masks: list[np.ndarray] | None = None,
        restrict: np.ndarray | None = None,
    ) -> pl.PodArrays:
        """The kernel's view of ``pods``; ``restrict`` narrows every pod to a node subset (topology)."""
        key = None
        if restrict is None:
            # jobs of one shape share their arrays: the kernel only reads them
            key = (job.pool, tuple(job.pods[i] for i in pods))
            hit = self._pod_arrays.get(key)
            if hit is not None:
                return hit
        n_ext = self.nodes.ext.shape[2]
        ints = np.zeros((len(pods), pl.P_INT_COLS), dtype=np.int64)
        share = np.zeros(len(pods))
        ext = np.zeros((len(pods), n_ext), dtype=np.int64)
        keys: dict[tuple, int] = {}
        elig: list[np.ndarray] = []
        ext_names = self.state.node_table.ext_names
        for row, i in enumerate(pods):
            req = job.pods[i]
            k = req.spec_key
            if k not in keys:
                keys[k] = len(elig)
                m = self.eligible(job, k)
                elig.append(m if restrict is None else m & restrict)
            ints[row] = (req.kind, req.whole, req.gpu_memory, req.cpu, req.memory, keys[k])
            share[row] = req.share
            for name, amount in req.ext:
                if name in ext_names:
                    ext[row, ext_names.index(name)] = amount
        out = pl.PodArrays(ints, share, ext, np.array(elig, dtype=np.bool_).reshape(len(elig), -1))
        if key is not None:
            self._pod_arrays[key] = out
        return out

    # -- queue accounting -----------------------------------------------------------------------

    def charge(self, job: Job, vec: tuple[float, float, float], sign: int = 1) -> None:
        """Add a placed pod's accounting to its leaf queue and every ancestor."""
        i = self.table.index.get(job.queue)
        if i is None:
            return
        self.alloc_version += 1
        for q in self.table.ancestors[i]:
            row = self.alloc[q]
            for r in range(3):
                row[r] += sign * vec[r]
            if not job.preemptible:
                row = self.alloc_np[q]
                for r in range(3):
                    row[r] += sign * vec[r]

    def placed_accounting(self, job: Job, pod: int, slot: int) -> tuple[float, int, int]:
        req = job.pods[pod]
        return (gpu_accounting(req, int(self.nodes.ints[slot, pl.N_DEV_MEM])), req.cpu, req.memory)
