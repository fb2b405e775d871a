"""One cycle's working state: fair shares, working copies of the node arrays, tentative placements.

A session never writes to ``ClusterState``; what it decides leaves only as
events in ``decisions``. Queue sums, fair shares and the node arrays are
copied at open, updated by each committed statement, thrown away at close.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import numpy as np

from muster import events as ev
from muster import mig
from muster.kernels import placement as pl
from muster.kernels.share import device_share

from . import reasons, subgroup_tree
from .config import AllocatorConfig
from .gang import elastic_state
from .ordering import QueueShares
from .pod_affinity_view import PodAffinityView
from .policy_placement import PolicyPlacer, is_policy, typical_shapes
from .queue_accounting import QueueTable, fair_shares, queue_accounting, usage_fractions
from .state import ACTIVE, ALLOCATED, PENDING, ClusterState, Job, Offer, gpu_accounting, leaf_counts, planes

T = TypeVar("T")


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
        nodes = state.node_table
        self.min_dev_mem = nodes.min_device_memory()
        self.total = nodes.totals()
        self.alloc, self.alloc_np, self.request = queue_accounting(
            state.queue_sums.by_queue, table, self.min_dev_mem
        )
        usage = usage_fractions(state, config.fairness, table, clock, self.total)
        self.fair = fair_shares(table, self.request, usage, self.total, config.fairness)
        self.shares = QueueShares(table.quota, table.limit, self.fair, self.alloc, table.priority, self.total)
        nodes.rerank()
        a = nodes.arrays
        self.nodes = pl.NodeArrays(a.ints.copy(), a.dev.copy(), a.ext.copy())
        self.in_scope = nodes.served_mask()
        self.slot_names = nodes.slot_names
        self._gpu_index: pl.GpuIndex | None = None
        self._placer: PolicyPlacer | None = None
        self.nodes_version = 0
        """Bumped by every change to ``nodes`` (placements, their undoing, evictions)."""
        self.alloc_version = 0
        """Bumped by every change to ``alloc`` and ``alloc_np``."""
        self._free_gpus = (-1, 0.0)
        self._eligible: dict[tuple, np.ndarray] = {}
        self._offers: dict[tuple[str, str], Offer] = {}
        self._pod_arrays: dict[tuple, pl.PodArrays] = {}
        self.decisions: list[ev.BindRequested | ev.EvictionRequested] = []
        self.reasons: dict[str, str] = {}
        # pods placed in this session: job -> {pod index: (slot, devices, share, pipelined)}
        self.placed: dict[str, dict[int, tuple[int, tuple[int, ...], float, bool]]] = {}
        # pods evicted in this session (a moved pod is in both)
        self.evicted: dict[str, set[int]] = {}
        self._pod_affinity: PodAffinityView | None = None
        self._memo: dict[str, tuple[int, object]] = {}

    def until_next_decision(self, key: str, build: Callable[[], T]) -> T:
        """``build()``, remembered under ``key`` until the session decides something more. Only a
        committed statement changes for good what jobs hold and the queues' sums, and it always adds a
        decision; an open statement is undone before anyone asks again."""
        found = self._memo.get(key)
        if found is not None and found[0] == len(self.decisions):
            return found[1]  # type: ignore[return-value]
        value = build()
        self._memo[key] = (len(self.decisions), value)
        return value

    # -- what a job has and wants ---------------------------------------------------------------

    def active(self, job: Job) -> int:
        """Pods of the job binding, bound or pipelined, counting this session's placements."""
        return job.n_active - len(self.evicted.get(job.name, ())) + len(self.placed.get(job.name, {}))

    def elastic(self, job: Job) -> int:
        """The job's elastic state for job order (§3.1): 0 below its minimum, 1 at it, 2 above; on a
        sub-group tree judged per leaf."""
        if not job.subgroups:
            return int(elastic_state(self.active(job), job.min_available))
        tree = job.tree
        return subgroup_tree.leaf_elastic_state(tree, self.leaf_counts(job))

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
        """The missing pods of a gang below its minimum, or else one more pod (§5.1); on a sub-group tree,
        the tree walk's pods (§14.3), then pods that belong to no leaf one at a time."""
        pending = self.pending_pods(job)
        if not pending:
            return []
        if not job.subgroups:
            missing = job.min_available - self.active(job)
            return pending[: max(missing, 1)]
        tree = job.tree
        by_leaf: dict[int, list[int]] = {}
        loose: list[int] = []
        for i in pending:
            node = tree.leaf_of.get(job.pods[i].subgroup)
            if node is None:
                loose.append(i)
            else:
                by_leaf.setdefault(node, []).append(i)
        counts = self.leaf_counts(job)
        wanted = subgroup_tree.pods_to_place(tree, counts, by_leaf)
        if wanted or not subgroup_tree.satisfied(tree, counts):
            return wanted
        return loose[:1]

    def leaf_counts(self, job: Job) -> list[int]:
        """Active pods per node of the job's sub-group tree, counting this session's placements and
        evictions."""
        placed = self.placed.get(job.name, {})
        evicted = self.evicted.get(job.name, ())
        state = job.state
        return leaf_counts(
            job.tree, job.pods, lambda i: (state[i] in ACTIVE and i not in evicted) or i in placed
        )

    def request_of(self, job: Job, pods: list[int]) -> tuple[float, float, float]:
        """Queue-accounting request of ``pods`` before placement (gpu-memory pods by the smallest device)."""
        gpu = cpu = mem = 0.0
        for i in pods:
            req = job.pods[i]
            if req.gpu_memory:
                gpu += max(device_share.py_func(pl.MEMORY, 0.0, req.gpu_memory, self.min_dev_mem), 0.0)
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

    def pod_affinity(self) -> PodAffinityView | None:
        """Pod affinity and anti-affinity in this cycle; None while no job has such terms (then no pod's
        nodes depend on another's)."""
        if self._pod_affinity is None and self.state.ledger.pod_affinity_jobs:
            self._pod_affinity = PodAffinityView(self.state, self.evicted, self.placed)
        return self._pod_affinity

    def offer(self, pool: str, runtime: str) -> Offer:
        """What the nodes of ``pool`` offer a pod of ``runtime`` (``NodeTable.offer``), asked once a cycle."""
        key = (pool, runtime)
        found = self._offers.get(key)
        if found is None:
            found = self._offers[key] = self.state.node_table.offer(pool, runtime)
        return found

    def no_fit(self, job: Job, pods: list[int], count: int) -> str:
        """Why ``pods`` of ``job`` found no room when the first ``count`` of them fitted."""
        why = reasons.no_fit(job, pods, count, self.nodes, self.pod_arrays(job, pods), self.offer)
        view = self.pod_affinity()
        if view is not None and view.constrained(job):
            return reasons.with_pod_affinity(
                why, job.pods[pods[count]] if count < len(pods) else job.pods[pods[0]]
            )
        return why

    def free_gpus(self) -> float:
        """GPUs not held by running pods on served nodes (idle, releasing, free parts of shared devices,
        and free MIG instances by their slices, as KAI's ``TotalGPUs``); remembered until the working
        arrays change."""
        version, value = self._free_gpus
        if version != self.nodes_version:
            ints, dev = self.nodes.ints, self.nodes.dev
            free = ints[:, pl.N_GPUS] - dev[pl.D_USED].sum(axis=1)
            value = float(np.sum(free[self.in_scope]))
            per_instance = mig.gpus_per_instance(self.state.node_table.ext_names)
            if any(per_instance):
                ext = self.nodes.ext[:, self.in_scope, : len(per_instance)]
                value += float(
                    ((ext[pl.E_CAP] - ext[pl.E_USED]) @ np.array(per_instance, dtype=np.int64)).sum()
                )
            self._free_gpus = (self.nodes_version, value)
        return value

    def gpu_index(self) -> pl.GpuIndex:
        if self._gpu_index is None:
            # under a placement policy, binpack places what the policy cannot (see policy_placement)
            strategy = self.config.placement_gpu if self.config.placement_gpu in pl.STRATEGIES else "binpack"
            if self.nodes_version == 0:
                # the working arrays are still the state's: its kept index is theirs
                self._gpu_index = self.state.node_table.gpu_index(strategy)
            else:
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
