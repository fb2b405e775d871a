"""The nodes a state serves: their specs by name, and their capacity and use in arrays by slot.

Arrays (``muster.kernels.placement.NodeArrays``) are updated in place as events arrive, so a cycle copies
them instead of rebuilding a snapshot. A removed node's slot is reused by the next node registered.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, NamedTuple

import msgspec
import numpy as np

from muster import events as ev
from muster import mig, runtimes
from muster import placement_predicates as predicates
from muster.kernels import placement as pl

from . import planes
from .pods import PodReq


class Offer(NamedTuple):
    """What the nodes of one pool offer a pod of one runtime (``NodeTable.offer``)."""

    runtimes: tuple[str, ...]
    """Every runtime some node of the pool runs, sorted."""
    nodes: int
    """Nodes that run the pod's runtime."""
    all_gpus: int
    """GPU devices on every node of the pool."""
    taints: tuple[ev.Taint, ...] = ()
    """Every distinct taint on the pool's schedulable nodes that run the pod's runtime, in first-seen order."""
    mig_strategies: tuple[str, ...] = ()
    """Every distinct MIG strategy label (``muster.mig.STRATEGY_LABEL``) on those nodes, sorted."""


@dataclass(slots=True)
class Node:
    slot: int
    spec: ev.NodeSpec


class ArrayImage(msgspec.Struct, array_like=True):
    dtype: str
    shape: list[int]
    data: bytes

    @classmethod
    def of(cls, a: np.ndarray) -> ArrayImage:
        return cls(str(a.dtype), list(a.shape), a.tobytes())

    def array(self) -> np.ndarray:
        # A copy: the state writes into its arrays, and a buffer over the image's bytes is read-only.
        return np.frombuffer(self.data, dtype=np.dtype(self.dtype)).reshape(self.shape).copy()


class NodesImage(msgspec.Struct, kw_only=True):
    nodes: dict[str, Node]
    free_slots: list[int]
    slot_names: list[str | None]
    ints: ArrayImage
    dev: ArrayImage
    ext: ArrayImage
    ext_names: list[str]
    node_version: int
    ranks_dirty: bool


class NodeTable:
    """Nodes by name and by slot, with the arrays a cycle places pods on."""

    CACHES: ClassVar[frozenset[str]] = frozenset({"_views", "_gpu_index", "_moved"})
    IMAGED_AS: ClassVar[dict[str, tuple[str, ...]]] = {"arrays": ("ints", "dev", "ext")}

    def __init__(self) -> None:
        self.nodes: dict[str, Node] = {}
        self.free_slots: list[int] = []
        self.slot_names: list[str | None] = []
        self.arrays = pl.empty_nodes(0, 1, 0)
        self.ext_names: list[str] = []
        self.node_version = 0
        """Bumped by every change to the arrays or the nodes."""
        self.ranks_dirty = False
        self._views: dict[tuple, object] = {}
        """What the views below read off the nodes' specs and capacities, kept until a node is registered,
        updated or removed: every cycle asks them again, and walking every node each time costs more
        than the cycle's decisions when few jobs change."""
        self._gpu_index: tuple[str, pl.GpuIndex] | None = None
        """The GPU index of the served nodes by strategy (``gpu_index``), as the arrays stood when last asked."""
        self._moved: set[int] = set()
        """Slots whose devices changed since then."""

    # -- nodes ---------------------------------------------------------------------------------

    def set(self, spec: ev.NodeSpec) -> None:
        """Register a node, or update a known one, in place."""
        node = self.nodes.get(spec.name)
        gpus = int(spec.resources.gpu)
        for name in spec.resources.extended:
            self._ext_index(name)
        if node is None:
            slot = self.free_slots.pop() if self.free_slots else len(self.slot_names)
            if slot == len(self.slot_names):
                self.slot_names.append(spec.name)
            else:
                self.slot_names[slot] = spec.name
            self._ensure_capacity(slot + 1, gpus, len(self.ext_names))
            self.arrays.ints[slot] = 0
            self.arrays.dev[:, slot] = 0.0
            self.arrays.ext[:, slot] = 0
            node = self.nodes[spec.name] = Node(slot, spec)
            self.ranks_dirty = True
        else:
            self._ensure_capacity(0, gpus, len(self.ext_names))
            node.spec = spec
        ints = self.arrays.ints[node.slot]
        ints[pl.N_GPUS] = gpus
        ints[pl.N_DEV_MEM] = int(spec.resources.gpu_memory)
        ints[pl.N_CPU_CAP] = int(spec.resources.cpu)
        ints[pl.N_MEM_CAP] = int(spec.resources.memory)
        ext = self.arrays.ext[pl.E_CAP, node.slot]
        ext[:] = 0
        for name, amount in spec.resources.extended.items():
            ext[self.ext_names.index(name)] = int(amount)
        self.node_version += 1
        self._views.clear()
        self._gpu_index = None

    def remove(self, name: str) -> int | None:
        """Forget a node; the slot it had (pods recorded there are the caller's), or None if unknown."""
        node = self.nodes.pop(name, None)
        if node is None:
            return None
        self.slot_names[node.slot] = None
        self.arrays.ints[node.slot] = 0
        self.arrays.dev[:, node.slot] = 0.0
        self.arrays.ext[:, node.slot] = 0
        self.free_slots.append(node.slot)
        self.ranks_dirty = True
        self.node_version += 1
        self._views.clear()
        self._gpu_index = None
        return node.slot

    def name_of(self, slot: int) -> str | None:
        """The node in ``slot`` now, if any."""
        return self.slot_names[slot] if 0 <= slot < len(self.slot_names) else None

    def _ensure_capacity(self, slots: int, gpus: int, n_ext: int) -> None:
        a = self.arrays
        n, g, e = a.ints.shape[0], a.dev.shape[2], a.ext.shape[2]
        if slots <= n and gpus <= g and n_ext <= e:
            return
        new = pl.empty_nodes(max(slots, n * 2, 16) if slots > n else n, max(g, gpus), max(e, n_ext))
        new.ints[:n] = a.ints
        new.dev[:, :n, :g] = a.dev
        new.ext[:, :n, :e] = a.ext
        self.arrays = new

    def _ext_index(self, name: str) -> int:
        if name not in self.ext_names:
            self.ext_names.append(name)
            self._ensure_capacity(0, 0, len(self.ext_names))
        return self.ext_names.index(name)

    def rerank(self) -> None:
        """Number nodes by name (the tie-break of placement); done lazily, before a cycle reads the arrays."""
        if not self.ranks_dirty:
            return
        self.ranks_dirty = False
        self._gpu_index = None  # indexed by rank
        for rank, name in enumerate(sorted(self.nodes)):
            self.arrays.ints[self.nodes[name].slot, pl.N_RANK] = rank

    # -- what pods hold --------------------------------------------------------------------------

    def hold(
        self, req: PodReq, slot: int, gpus: tuple[int, ...], share: float, plane: int, sign: int
    ) -> None:
        """Add (sign 1) or take away (sign -1) a pod's resources on node ``slot``, in ``plane``."""
        planes.hold(self.arrays, self.ext_names, req, slot, gpus, share, plane, sign)
        self.node_version += 1
        self._moved.add(slot)

    def move(self, req: PodReq, slot: int, gpus: tuple[int, ...], share: float, sign: int) -> None:
        """Move a pod's resources on node ``slot`` from used to releasing (sign 1), or back (sign -1)."""
        planes.move(self.arrays, self.ext_names, req, slot, gpus, share, sign)
        self.node_version += 2  # a change to each plane
        self._moved.add(slot)

    def mark_shared(self, req: PodReq, slot: int, gpus: tuple[int, ...], sign: int) -> None:
        planes.mark_shared(self.arrays, req, slot, gpus, sign)
        self._moved.add(slot)

    # -- views used by cycles -------------------------------------------------------------------

    def gpu_index(self, strategy: str) -> pl.GpuIndex:
        """A copy of ``pl.build_gpu_index`` of the served nodes as the arrays stand (ranks up to date). The
        index is kept between cycles: only the nodes whose devices changed since are filed again, which
        leaves it as a fresh build would (a node's place in it depends on its own devices alone); a node
        registered, updated or removed, or a new ranking, builds it afresh."""
        self.rerank()
        kept = self._gpu_index
        if kept is None or kept[0] != strategy:
            index = pl.build_gpu_index(self.arrays, self.served_mask(), strategy)
            self._gpu_index = (strategy, index)
        else:
            index = kept[1]
            for slot in self._moved:
                pl.rebucket(self.arrays, index, slot)
        self._moved.clear()
        return pl.GpuIndex(*(a.copy() for a in index[:-1]), index.strategy_gpu)

    def _view(self, key: tuple, build):
        """``build()``, remembered under ``key`` until the nodes change; an array comes back read-only, as
        every caller shares it."""
        found = self._views.get(key)
        if found is None:
            found = build()
            if isinstance(found, np.ndarray):
                found.flags.writeable = False
            self._views[key] = found
        return found

    def min_device_memory(self) -> int:
        """The smallest GPU memory of a node that declares one (0: none does)."""
        return self._view(("min_device_memory",), self._min_device_memory)

    def _min_device_memory(self) -> int:
        mems = [n.spec.resources.gpu_memory for n in self.nodes.values() if n.spec.resources.gpu_memory > 0]
        return min(mems) if mems else 0

    def eligible(self, pool: str, spec_key: tuple) -> np.ndarray:
        """Slots of the nodes a pod of ``pool`` with ``spec_key`` (``PodReq.spec_key``) may use: in that
        pool, schedulable, running pods of its runtime, with the labels it selects, one of the GPU models
        it names (if any), every extended resource it asks for, its NoSchedule and NoExecute taints
        tolerated and its required node affinity met (``muster.placement_predicates``), and the node's
        MIG strategy admitting its kind of GPU request (``muster.mig.node_admits``)."""
        return self._view(("eligible", pool, spec_key), lambda: self._eligible(pool, spec_key))

    def _eligible(self, pool: str, spec_key: tuple) -> np.ndarray:
        selector, models, ext_names, runtime, tolerations, affinity, gpu_request = spec_key
        mask = np.zeros(self.arrays.ints.shape[0], dtype=np.bool_)
        for node in self.nodes.values():
            spec = node.spec
            if spec.unschedulable or spec.pool != pool or not runtimes.can_run(spec, runtime):
                continue
            if any(spec.labels.get(k) != v for k, v in selector):
                continue
            if models and spec.gpu_model not in models:
                continue
            if any(e not in spec.resources.extended for e in ext_names):
                continue
            if spec.taints and predicates.untolerated(tolerations, spec.taints):
                continue
            if affinity and not predicates.affinity_matches(affinity, spec.name, spec.labels):
                continue
            if gpu_request and not mig.node_admits(spec.labels, spec.resources.extended, gpu_request):
                continue
            mask[node.slot] = True
        return mask

    def offer(self, pool: str, runtime: str) -> Offer:
        """What the nodes of ``pool`` offer a pod of ``runtime``, schedulable or not."""
        return self._view(("offer", pool, runtime), lambda: self._offer(pool, runtime))

    def _offer(self, pool: str, runtime: str) -> Offer:
        kinds: set[str] = set()
        taints: dict[ev.Taint, None] = {}
        strategies: set[str] = set()
        nodes = all_gpus = 0
        for node in self.nodes.values():
            spec = node.spec
            if spec.pool != pool:
                continue
            kinds.update(runtimes.node_runtimes(spec))
            all_gpus += int(spec.resources.gpu)
            runs = runtimes.can_run(spec, runtime)
            nodes += runs
            if runs and not spec.unschedulable:
                taints.update(dict.fromkeys(spec.taints))
                if mig.STRATEGY_LABEL in spec.labels:
                    strategies.add(spec.labels[mig.STRATEGY_LABEL])
        return Offer(tuple(sorted(kinds)), nodes, all_gpus, tuple(taints), tuple(sorted(strategies)))

    def served_mask(self) -> np.ndarray:
        """Which slots hold a node."""
        return self._view(("served_mask",), self._served_mask)

    def _served_mask(self) -> np.ndarray:
        mask = np.zeros(self.arrays.ints.shape[0], dtype=np.bool_)
        for node in self.nodes.values():
            mask[node.slot] = True
        return mask

    def totals(self) -> np.ndarray:
        """gpu, cpu millicores, memory bytes over every node served; gpu counts devices and, as KAI's
        total does (§4, §17), g GPUs per MIG instance of a ``<g>g`` profile a node offers."""
        return self._view(("totals",), self._totals)

    def _totals(self) -> np.ndarray:
        mask = self.served_mask()
        ints = self.arrays.ints
        gpus = int(ints[mask, pl.N_GPUS].sum())
        per_instance = mig.gpus_per_instance(self.ext_names)
        if any(per_instance):
            capacity = self.arrays.ext[pl.E_CAP][mask]
            gpus += int((capacity[:, : len(per_instance)] @ np.array(per_instance, dtype=np.int64)).sum())
        return np.array(
            [gpus, ints[mask, pl.N_CPU_CAP].sum(), ints[mask, pl.N_MEM_CAP].sum()], dtype=np.float64
        )

    # -- snapshots ------------------------------------------------------------------------------

    def image(self) -> NodesImage:
        """The table as a snapshot holds it, ranks up to date (a fold that ran no cycle images the same
        bytes as one that did)."""
        self.rerank()
        return NodesImage(
            nodes=self.nodes,
            free_slots=self.free_slots,
            slot_names=self.slot_names,
            ints=ArrayImage.of(self.arrays.ints),
            dev=ArrayImage.of(self.arrays.dev),
            ext=ArrayImage.of(self.arrays.ext),
            ext_names=self.ext_names,
            node_version=self.node_version,
            ranks_dirty=self.ranks_dirty,
        )

    @classmethod
    def restore(cls, image: NodesImage) -> NodeTable:
        table = cls()
        table.nodes = image.nodes
        table.free_slots = image.free_slots
        table.slot_names = image.slot_names
        table.arrays = pl.NodeArrays(image.ints.array(), image.dev.array(), image.ext.array())
        table.ext_names = image.ext_names
        table.node_version = image.node_version
        table.ranks_dirty = image.ranks_dirty
        return table
