"""GPU pods placed by the benchmark's policies (``muster.kernels.policies``) inside the allocator.

With ``placement_gpu`` one of ``GPU_POLICIES`` only the node and devices of
a GPU pod change; everything else (queue and job order, gangs, selectors,
pipelining, topology masks, cpu-only pods) is the allocator's own.

* **Feasibility is the allocator's.** For each pod the allocator's own test
  (``placement._evaluate``) finds the nodes it fits on, on idle resources
  if any node has room there, else on free ones (the pod is then
  pipelined). The policy only chooses among those: the view hands it every
  other node with a GPU model the pod does not accept. If the policy finds
  nothing (a rounding of shares to milli), binpack places the pod.
* **The view.** ``policies`` sees free cpu, memory and milli per device.
  Nodes with equal rows are interchangeable, so the view holds one row per
  distinct row (a *class*), each at its lowest-ranked node where the pod
  fits; ties inside the policy go to the lowest rank, as over the full
  cluster. Rows are kept per node and re-read only where the working
  arrays changed. ``random`` draws among nodes, so it sees every fitting
  node. ``bestfit`` normalises by the largest GPU node, so it also sees the
  classes where the pod does not fit.
* **Typical shapes** (``fgd``, ``fgd-pack``): the GPU requests of pending
  and running pods, counted, the ``SHAPES_TOP`` most common (ties by
  shape), weighted by count: a function of the allocator's state.
* **Randomness** (``random``): a generator seeded by the cycle, job name and
  pod index, so a replay draws the same.
* A gpu-memory pod on a cluster whose GPU nodes differ in device memory has
  no single size in milli; binpack places it.
"""

from __future__ import annotations

import hashlib

import numpy as np

from muster.kernels import placement as pl
from muster.kernels import policies as pol
from muster.kernels.share import device_share

from .config import GPU_POLICIES
from .state import ACTIVE, PENDING, ClusterState

SHAPES_TOP = 16
"""How many of the most common GPU request shapes fgd and fgd-pack weigh."""
ONLY_MODEL_0 = 1
"""The view marks nodes the pod may use as GPU model 0 and the others as model 1."""


def is_policy(name: str) -> bool:
    """Whether ``placement_gpu`` names a policy of ``muster.kernels.policies`` rather than a KAI strategy."""
    return name in GPU_POLICIES


def shape_of(kind: int, whole: int, share: float, gpu_memory: int, dev_mem: int) -> tuple[int, int] | None:
    """(devices, milli per device) of a GPU request, None if it has no size in milli."""
    if kind == pl.WHOLE:
        return whole, pol.MILLI
    if kind == pl.FRACTION:
        return 1, min(max(round(share * pol.MILLI), 1), pol.MILLI - 1)
    if kind == pl.MEMORY and dev_mem > 0:
        return 1, min(max(round(device_share(kind, share, gpu_memory, dev_mem) * pol.MILLI), 1), pol.MILLI)
    return None


def typical_shapes(state: ClusterState, dev_mem: int, top: int = SHAPES_TOP) -> pol.ShapeArrays:
    """The ``top`` most common GPU requests of pending and running pods, weighted by their counts."""
    counts: dict[tuple[int, int, int, int], int] = {}
    for job in state.jobs.values():
        for req, st in zip(job.pods, job.state, strict=True):
            if req.kind == pl.CPU_ONLY or req.invalid is not None or (st != PENDING and st not in ACTIVE):
                continue
            size = shape_of(req.kind, req.whole, req.share, req.gpu_memory, dev_mem)
            if size is None:
                continue
            key = (req.cpu, size[0], size[1], req.memory)
            counts[key] = counts.get(key, 0) + 1
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:top]
    if not ranked:
        return pol.empty_shapes()
    shapes = np.array([k for k, _ in ranked], dtype=np.int64)
    weight = np.array([c for _, c in ranked], dtype=np.float64)
    return pol.ShapeArrays(
        cpu=shapes[:, 0].copy(),
        num_gpu=shapes[:, 1].copy(),
        gpu_milli=shapes[:, 2].copy(),
        model_mask=np.full(len(ranked), pol.ANY_MODEL, dtype=np.int64),
        weight=weight / weight.sum(),
        mem=shapes[:, 3].copy(),
    )


def pod_seed(cycle: int, job: str, pod: int) -> int:
    """The random policy's seed for one pod: a pure function of the log."""
    digest = hashlib.sha256(f"{cycle}/{job}/{pod}".encode()).digest()
    return int.from_bytes(digest[:8], "little")


class PolicyPlacer:
    """Places pods under one policy on a session's working arrays, keeping its view of them in step."""

    def __init__(
        self, policy: str, nodes: pl.NodeArrays, index: pl.GpuIndex, shapes: pol.ShapeArrays
    ) -> None:
        if not is_policy(policy):
            raise ValueError(f"placement_gpu: {policy!r} is not a placement policy")
        self.policy = policy
        self.random = pol.POLICIES[policy].code == pol.RANDOM
        self.shapes = shapes if pol.POLICIES[policy].needs_shapes else None
        ranked = index.node_of_rank
        self.slots = np.ascontiguousarray(ranked[ranked >= 0], dtype=np.int64)
        dev_mem = np.unique(nodes.ints[self.slots, pl.N_DEV_MEM])
        self.dev_mem = int(dev_mem[0]) if dev_mem.size == 1 else 0  # 0: gpu-memory pods go to binpack
        self.rows = pl.view_rows(nodes, self.slots, idle=True)
        self.class_of = np.full(self.slots.shape[0], -1, dtype=np.int64)
        self._position = np.full(nodes.ints.shape[0], -1, dtype=np.int64)  # slot -> position in slots
        self._position[self.slots] = np.arange(self.slots.shape[0])
        self._keys: dict[bytes, int] = {}
        self._table = np.zeros((max(8, self.slots.shape[0] // 4), self.rows.shape[1]), dtype=np.int64)
        self._size: list[int] = []
        self._own = np.arange(self.slots.shape[0], dtype=np.int64)  # each node its own class (random)
        self._assign(range(self.slots.shape[0]))
        self.version = -1
        """The session's ``nodes_version`` the rows describe."""

    # -- keeping the view in step ------------------------------------------------------------------

    def _assign(self, positions) -> None:
        """Put the nodes at ``positions`` into the class of their (current) row."""
        for p in positions:
            key = self.rows[p].tobytes()
            c = self._keys.get(key)
            if c is None:
                c = self._keys[key] = len(self._size)
                if c == self._table.shape[0]:
                    self._table = np.concatenate([self._table, np.zeros_like(self._table)])
                self._table[c] = self.rows[p]
                self._size.append(0)
            old = int(self.class_of[p])
            if old >= 0:
                self._size[old] -= 1
            self._size[c] += 1
            self.class_of[p] = c

    def sync(self, nodes: pl.NodeArrays, version: int) -> None:
        """Re-read the nodes whose rows changed since ``version`` was last seen (others' placements, evictions,
        rollbacks)."""
        if version == self.version:
            return
        self._assign(pl.changed_rows(nodes, self.slots, self.rows, True).tolist())
        self.version = version

    def _refresh(self, nodes: pl.NodeArrays, slot: int) -> None:
        p = int(self._position[slot])
        if p < 0:
            return
        self.rows[p] = pl.view_rows(nodes, np.array([slot], dtype=np.int64), True)[0]
        self._assign((p,))

    # -- placing -----------------------------------------------------------------------------------

    def place(
        self,
        nodes: pl.NodeArrays,
        pods: pl.PodArrays,
        index: pl.GpuIndex,
        strategy_cpu: str,
        seeds: list[int],
        releasing_first: bool = False,
    ) -> pl.Placement:
        """Place ``pods`` in order like ``placement.place`` (stopping at the first that fits nowhere), GPU pods
        by the policy; ``seeds`` are the random policy's, one per pod; ``releasing_first`` as there."""
        p = pods.ints.shape[0]
        g = max(nodes.dev.shape[2], 1)
        out = pl.Placement(
            0,
            np.full(p, -1, dtype=np.int64),
            np.full((p, g), -1, dtype=np.int64),
            np.zeros(p),
            np.zeros(p, dtype=np.bool_),
        )
        for i in range(p):
            if pods.ints[i, pl.P_KIND] == pl.CPU_ONLY:
                node = self._place_kai(nodes, pods, i, index, strategy_cpu, out, releasing_first)
            else:
                node, device = self.choose(nodes, pods, i, seeds[i])
                if node >= 0:
                    pl.commit_on(nodes, pods, i, node, device, out, i, index, releasing_first)
                else:
                    node = self._place_kai(nodes, pods, i, index, strategy_cpu, out, releasing_first)
            if node < 0:
                return out._replace(count=i)
            self._refresh(nodes, node)
        return out._replace(count=p)

    def _place_kai(
        self,
        nodes: pl.NodeArrays,
        pods: pl.PodArrays,
        i: int,
        index: pl.GpuIndex,
        strategy_cpu: str,
        out,
        releasing_first: bool,
    ) -> int:
        """Pod ``i`` placed by binpack (gpu) / the cpu strategy, recorded in row ``i`` of ``out``."""
        one = pl.PodArrays(pods.ints[i : i + 1], pods.share[i : i + 1], pods.ext[i : i + 1], pods.eligible)
        got = pl.place(nodes, one, "binpack", strategy_cpu, index=index, releasing_first=releasing_first)
        if got.count == 0:
            return -1
        out.node[i] = got.node[0]
        out.devices[i] = got.devices[0]
        out.share[i] = got.share[0]
        out.pipelined[i] = got.pipelined[0]
        return int(got.node[0])

    def request(self, pods: pl.PodArrays, i: int) -> pol.PodRequest | None:
        """Pod ``i`` as ``policies`` sees it, restricted to model 0 (the nodes it may use); None if it has no
        size in milli."""
        r = pods.ints[i]
        size = shape_of(
            int(r[pl.P_KIND]), int(r[pl.P_WHOLE]), float(pods.share[i]), int(r[pl.P_GPU_MEM]), self.dev_mem
        )
        if size is None:
            return None
        return pol.PodRequest(int(r[pl.P_CPU]), int(r[pl.P_MEM]), size[0], size[1], ONLY_MODEL_0)

    def choose(self, nodes: pl.NodeArrays, pods: pl.PodArrays, i: int, seed: int) -> tuple[int, int]:
        """(node slot, device for a shared pod or -1) the policy picks for pod ``i``; (-1, -1) when it has
        nothing to choose from or no size in milli (the caller falls back to binpack)."""
        pod = self.request(pods, i)
        if pod is None:
            return -1, -1
        for idle in (True, False):
            if self.random:
                rows = self.rows if idle else pl.view_rows(nodes, self.slots, False)
                first = pl.first_fit_per_class(nodes, pods, i, self.slots, self._own, rows.shape[0], idle)
                table, live = rows, np.zeros(rows.shape[0], dtype=np.bool_)
            elif idle:
                n = len(self._size)
                first = pl.first_fit_per_class(nodes, pods, i, self.slots, self.class_of, n, True)
                table, live = self._table[:n], np.array(self._size, dtype=np.int64) > 0
            else:
                rows = pl.view_rows(nodes, self.slots, False)
                table, inverse = np.unique(rows, axis=0, return_inverse=True)
                inverse = inverse.reshape(-1).astype(np.int64)
                first = pl.first_fit_per_class(nodes, pods, i, self.slots, inverse, table.shape[0], False)
                live = np.ones(table.shape[0], dtype=np.bool_)
            if (first >= 0).any():
                return self._pick(table, first, live, pod, seed)
        return -1, -1

    def _pick(
        self, table: np.ndarray, first: np.ndarray, live: np.ndarray, pod: pol.PodRequest, seed: int
    ) -> tuple[int, int]:
        fits = np.flatnonzero(first >= 0)
        # rows in the rank order of the nodes they stand for, so the policy's ties go to the lowest rank
        order = fits[np.argsort(self._position[first[fits]], kind="stable")]
        rows = order
        if self.policy == "bestfit":
            rows = np.concatenate([order, np.flatnonzero(live & (first < 0))])
        view = table[rows]
        model = np.zeros(rows.shape[0], dtype=np.int64)
        model[order.shape[0] :] = 1  # rows the pod does not fit on, there for bestfit's largest node only
        nodes = pol.NodeArrays(
            cpu_free=np.ascontiguousarray(view[:, pl.V_CPU_FREE]),
            mem_free=np.ascontiguousarray(view[:, pl.V_MEM_FREE]),
            dev_free=np.ascontiguousarray(view[:, pl.V_DEV :]),
            model=model,
            cpu_cap=np.ascontiguousarray(view[:, pl.V_CPU_CAP]),
            mem_cap=np.ascontiguousarray(view[:, pl.V_MEM_CAP]),
            kind=np.arange(rows.shape[0], dtype=np.int64),
        )
        rng = np.random.default_rng(seed) if self.random else None
        shapes = self.shapes
        if shapes is not None and shapes.cpu.shape[0] == 0:
            shapes = _own_shape(pod)  # nothing pending or running yet: the pod is the workload
        got = pol.place(self.policy, nodes, pod, rng=rng, shapes=shapes)
        if got.node < 0:
            return -1, -1
        slot = int(first[order[got.node]])
        device = got.devices[0] if pod.gpu_milli < pol.MILLI else -1
        return slot, device


def _own_shape(pod: pol.PodRequest) -> pol.ShapeArrays:
    one = lambda v: np.array([v], dtype=np.int64)  # noqa: E731
    return pol.ShapeArrays(
        one(pod.cpu), one(pod.num_gpu), one(pod.gpu_milli), one(pol.ANY_MODEL), np.ones(1), one(pod.mem)
    )
