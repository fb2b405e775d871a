"""Node filtering, scoring and device choice for pods, as KAI's allocate does it.

The cluster is a struct of arrays (``NodeArrays``); a pod is one row of
``PodArrays``. For each pod, in order, the best feasible node is chosen and
the pod is applied to the arrays at once, so the next pod of the same gang
sees it. Score, highest first, ties to the lowest ``rank`` (node name order):

* +1000  binpack only: a fractional pod and a node with a shared device it fits on;
* +100   the pod fits on idle resources (otherwise it is pipelined onto
  resources that releasing pods still hold);
* +10    a cpu-only pod on a cpu-only node;
* placement: gpu pods on whole free GPUs (idle + releasing devices), cpu-only
  pods on free cpu: binpack prefers the fewest free, spread the largest free
  fraction. KAI's 0..9 binpack score is a decreasing function of free, and
  the other terms are multiples of 10, so comparing the raw keys gives the
  same order.

Devices: whole-GPU pods take devices nothing holds, idle ones first, lowest
index first (releasing ones first when the victim solver moves a victim, as
KAI charges a pod it pipelines to releasing resources). A fraction (or a
gpu-memory request, as memory / device memory) goes on one device: binpack
= the most used shared device it fits on, idle devices last; spread = idle
devices first, then the least used.

Used resources include pipelined pods, releasing resources are held by pods
being evicted: idle = capacity - used - releasing, free = capacity - used.

Whole-GPU pods go through a bucketed index (``GpuIndex``): nodes bucketed by
free GPUs, each bucket a bitset in rank order, so the best node is the first
feasible set bit of the best bucket; the result is identical to the scan.
Fractions and gpu-memory pods use it too, after the nodes with shared
devices; cpu-only pods are still scanned.

The jitted cores take the NamedTuples whole: ``NodeArrays``, ``PodArrays``,
``GpuIndex``, ``Placement`` for what they write, and a pod's ``Request``,
which they read out of ``PodArrays`` themselves (``_request``).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from muster.kernels.jit import njit
from muster.kernels.share import CPU_ONLY, FRACTION, MEMORY, WHOLE, device_share
from muster.kernels.share import pod_kind as pod_kind  # callers know the kinds as pl.WHOLE, pl.pod_kind
from muster.tolerances import EPS

BINPACK = 0
SPREAD = 1
STRATEGIES = {"binpack": BINPACK, "spread": SPREAD}

# columns of NodeArrays.ints
N_GPUS, N_DEV_MEM, N_CPU_CAP, N_CPU_USED, N_CPU_REL, N_MEM_CAP, N_MEM_USED, N_MEM_REL, N_RANK = range(9)
N_INT_COLS = 9
# planes of NodeArrays.dev
D_USED, D_REL, D_FRAC = range(3)
# planes of NodeArrays.ext
E_CAP, E_USED, E_REL = range(3)
# columns of PodArrays.ints
P_KIND, P_WHOLE, P_GPU_MEM, P_CPU, P_MEM, P_SPEC = range(6)
P_INT_COLS = 6


class NodeArrays(NamedTuple):
    """Mutable cluster state, one row per node slot."""

    ints: (
        np.ndarray
    )  # int64[N, 9]: gpus, device memory, cpu cap/used/releasing, memory cap/used/releasing, rank
    dev: np.ndarray  # float64[3, N, G]: share used, share releasing, count of fractional pods
    ext: np.ndarray  # int64[3, N, E]: extended resources cap/used/releasing


class PodArrays(NamedTuple):
    """Pods to place in order, with the node mask of each pod's spec."""

    ints: np.ndarray  # int64[P, 6]: kind, whole gpus, gpu memory, cpu, memory, spec index into eligible
    share: np.ndarray  # float64[P]: fraction of one device (FRACTION pods)
    ext: np.ndarray  # int64[P, E]
    eligible: np.ndarray  # bool[S, N]: nodes each spec may use (pool, selector, models, schedulable)


class Placement(NamedTuple):
    """Where pods went; the first ``count`` rows are valid."""

    count: int
    node: np.ndarray  # int64[P]
    devices: np.ndarray  # int64[P, G], -1 padded
    share: np.ndarray  # float64[P]: share of devices[0] for shared pods, 0 for whole devices
    pipelined: np.ndarray  # bool[P]


class Request(NamedTuple):
    """What one pod asks for, as the jitted cores read it: one row of ``PodArrays`` (see ``_request``)."""

    kind: int
    whole: int  # whole devices (WHOLE pods)
    share: float  # fraction of one device (FRACTION pods)
    gpu_mem: int  # bytes of one device (MEMORY pods)
    cpu: int
    mem: int
    ext: np.ndarray  # int64[E]


def empty_nodes(n: int, max_gpus: int, n_ext: int = 0) -> NodeArrays:
    """Zeroed arrays for ``n`` node slots."""
    return NodeArrays(
        ints=np.zeros((n, N_INT_COLS), dtype=np.int64),
        dev=np.zeros((3, n, max_gpus), dtype=np.float64),
        ext=np.zeros((3, n, n_ext), dtype=np.int64),
    )


def place(
    nodes: NodeArrays,
    pods: PodArrays,
    strategy_gpu: str = "binpack",
    strategy_cpu: str = "binpack",
    index: GpuIndex | None = None,
    releasing_first: bool = False,
) -> Placement:
    """Place ``pods`` one after the other, mutating ``nodes``; stops at the first pod that fits nowhere.

    ``index``, if given, must describe ``nodes`` (see ``GpuIndex``) and is kept up to date.
    ``releasing_first``: whole-GPU pods take releasing devices before idle ones (a victim the solver
    moves); node choice is unchanged.
    """
    p = pods.ints.shape[0]
    if pods.ints.shape[1] != P_INT_COLS:
        raise ValueError(f"pods.ints: expected {P_INT_COLS} columns, got {pods.ints.shape[1]}")
    if pods.eligible.shape[1] != nodes.ints.shape[0]:
        raise ValueError("pods.eligible: one column per node slot expected")
    if pods.ext.shape[1] != nodes.ext.shape[2]:
        raise ValueError("pods.ext: one column per extended resource of nodes.ext expected")
    g = nodes.dev.shape[2]
    out = Placement(
        0,
        np.full(p, -1, dtype=np.int64),
        np.full((p, max(g, 1)), -1, dtype=np.int64),
        np.zeros(p, dtype=np.float64),
        np.zeros(p, dtype=np.bool_),
    )
    sg, sc = STRATEGIES[strategy_gpu], STRATEGIES[strategy_cpu]
    if index is None:
        count = _place_all(nodes, pods, sg, sc, out, releasing_first)
    else:
        count = _place_all_indexed(nodes, pods, sg, sc, out, index, releasing_first)
    return out._replace(count=int(count))


def unplace(nodes: NodeArrays, pods: PodArrays, placement: Placement, index: GpuIndex | None = None) -> None:
    """Undo ``placement`` (the rollback of a statement), newest pod first."""
    _unplace_all(nodes, pods, placement, index is not None, index if index is not None else _no_index())


def _no_index() -> GpuIndex:
    """An index of nothing, passed where the kernel is told not to use one (its types are an index's)."""
    z = np.zeros(1, dtype=np.int64)
    return GpuIndex(np.zeros((1, 1), dtype=np.uint64), z, z, z, z, z, BINPACK)


@njit(cache=True)
def _request(pods, i):
    p = pods.ints[i]
    return Request(p[P_KIND], p[P_WHOLE], pods.share[i], p[P_GPU_MEM], p[P_CPU], p[P_MEM], pods.ext[i])


# -- feasibility and scoring --------------------------------------------------------------------


@njit(cache=True)
def _free_whole(dev, n, gpus):
    """(idle whole devices, whole devices nothing holds) on node n."""
    idle = 0
    free = 0
    for d in range(gpus):
        if dev[D_USED, n, d] <= EPS:
            free += 1
            if dev[D_REL, n, d] <= EPS:
                idle += 1
    return idle, free


@njit(cache=True)
def _fits_rest(ints, ext, n, cpu, mem, pext, idle):
    """cpu, memory and extended resources fit on node n (on idle resources when ``idle``)."""
    # arrays, not the NamedTuples: taking an array out of a tuple costs a reference count, and the
    # per-node helpers run for every node a pod is tried on
    c = ints[n, N_CPU_USED] + cpu
    m = ints[n, N_MEM_USED] + mem
    if idle:
        c += ints[n, N_CPU_REL]
        m += ints[n, N_MEM_REL]
    if c > ints[n, N_CPU_CAP] or m > ints[n, N_MEM_CAP]:
        return False
    for e in range(pext.shape[0]):
        if pext[e] == 0:
            continue
        u = ext[E_USED, n, e] + pext[e]
        if idle:
            u += ext[E_REL, n, e]
        if u > ext[E_CAP, n, e]:
            return False
    return True


@njit(cache=True)
def _shared_fit(dev, n, gpus, need, idle):
    """A shared device (holding fractional pods) on node n that ``need`` more share fits on."""
    for d in range(gpus):
        if dev[D_FRAC, n, d] > 0:
            u = dev[D_USED, n, d] + need
            if idle:
                u += dev[D_REL, n, d]
            if u <= 1.0 + EPS:
                return True
    return False


@njit(cache=True)
def _device_fit(dev, n, gpus, need, idle):
    """Any device (shared or nothing held) that a fraction ``need`` fits on."""
    for d in range(gpus):
        u = dev[D_USED, n, d]
        if idle:
            u += dev[D_REL, n, d]
        if (dev[D_FRAC, n, d] > 0 or dev[D_USED, n, d] <= EPS) and u + need <= 1.0 + EPS:
            return True
    return False


@njit(cache=True)
def _evaluate(ints, dev, ext, n, req, sg, sc):
    """(feasible, tier, key) of a pod on node n (of NodeArrays ints, dev, ext): higher tier, then higher key,
    is better."""
    kind = req.kind
    cpu = req.cpu
    mem = req.mem
    pext = req.ext
    gpus = ints[n, N_GPUS]
    fits_idle = False
    fits_free = False
    tier = 0
    if kind == CPU_ONLY:
        fits_idle = _fits_rest(ints, ext, n, cpu, mem, pext, True)
        fits_free = fits_idle or _fits_rest(ints, ext, n, cpu, mem, pext, False)
        if gpus == 0:
            tier += 10
    elif kind == WHOLE:
        idle_w, free_w = _free_whole(dev, n, gpus)
        fits_idle = idle_w >= req.whole and _fits_rest(ints, ext, n, cpu, mem, pext, True)
        fits_free = fits_idle or (free_w >= req.whole and _fits_rest(ints, ext, n, cpu, mem, pext, False))
    else:
        need = device_share(kind, req.share, req.gpu_mem, ints[n, N_DEV_MEM])
        if need < 0.0 or need > 1.0 + EPS:
            return False, 0, 0.0
        fits_idle = _device_fit(dev, n, gpus, need, True) and _fits_rest(ints, ext, n, cpu, mem, pext, True)
        fits_free = fits_idle or (
            _device_fit(dev, n, gpus, need, False) and _fits_rest(ints, ext, n, cpu, mem, pext, False)
        )
        if fits_free and sg == BINPACK and _shared_fit(dev, n, gpus, need, False):
            tier += 1000
    if not fits_free:
        return False, 0, 0.0
    if fits_idle:
        tier += 100
    key = 0.0
    if kind == CPU_ONLY:
        cap = ints[n, N_CPU_CAP]
        free = cap - ints[n, N_CPU_USED]
        if cap > 0:
            key = -float(free) if sc == BINPACK else free / cap
    else:
        _, free_w = _free_whole(dev, n, gpus)
        if gpus > 0:
            key = -float(free_w) if sg == BINPACK else free_w / gpus
    return True, tier, key


@njit(cache=True)
def _scan_best(nodes, elig, req, sg, sc):
    """The best node for the pod by scanning every eligible node, -1 if it fits nowhere."""
    ints, dev, ext = nodes.ints, nodes.dev, nodes.ext
    best = -1
    best_tier = -1
    best_key = 0.0
    best_rank = 0
    for n in range(ints.shape[0]):
        if not elig[n]:
            continue
        ok, tier, key = _evaluate(ints, dev, ext, n, req, sg, sc)
        if not ok:
            continue
        rank = ints[n, N_RANK]
        if (
            best < 0
            or tier > best_tier
            or (tier == best_tier and key > best_key)
            or (tier == best_tier and key == best_key and rank < best_rank)
        ):
            best = n
            best_tier = tier
            best_key = key
            best_rank = rank
    return best


# -- applying a pod to a node -------------------------------------------------------------------


@njit(cache=True)
def _apply(nodes, n, req, sg, out_devices, out_share, i, releasing_first):
    """Choose devices on node n, apply the pod, record its devices and share in row i of the outputs;
    returns pipelined."""
    ints = nodes.ints
    dev = nodes.dev
    ext = nodes.ext
    kind = req.kind
    whole = req.whole
    cpu = req.cpu
    mem = req.mem
    pext = req.ext
    gpus = ints[n, N_GPUS]
    idle = _fits_rest(ints, ext, n, cpu, mem, pext, True)
    if kind == WHOLE:
        taken = 0
        took_releasing = False
        # idle devices first, then releasing ones (pipelined); KAI charges a pod it only pipelines to the
        # node's releasing resources, so with ``releasing_first`` the idle devices stay idle for the next pod
        for pass_ in range(2):
            take_releasing = (pass_ == 1) != releasing_first
            for d in range(gpus):
                if taken == whole:
                    break
                if dev[D_USED, n, d] > EPS:
                    continue
                if (dev[D_REL, n, d] > EPS) != take_releasing:
                    continue
                dev[D_USED, n, d] = 1.0
                out_devices[i, taken] = d
                taken += 1
                took_releasing = took_releasing or take_releasing
        idle = idle and not took_releasing
        out_share[i] = 0.0
    elif kind == FRACTION or kind == MEMORY:  # noqa: SIM109 (numba)
        need = device_share(kind, req.share, req.gpu_mem, ints[n, N_DEV_MEM])
        best = -1
        best_score = 0.0
        best_idle = False
        for want_idle in (True, False):
            for d in range(gpus):
                shared = dev[D_FRAC, n, d] > 0
                if not shared and dev[D_USED, n, d] > EPS:
                    continue
                u = dev[D_USED, n, d]
                if want_idle:
                    u += dev[D_REL, n, d]
                if u + need > 1.0 + EPS:
                    continue
                if shared:
                    used = dev[D_USED, n, d]
                    score = used if sg == BINPACK else 1.0 - used
                else:
                    score = 0.0 if sg == BINPACK else 1.0
                    if sg == BINPACK:
                        score = -1.0  # idle devices last under binpack, even after an empty shared one
                if best < 0 or score > best_score:
                    best = d
                    best_score = score
            if best >= 0:
                best_idle = want_idle
                break
        idle = idle and best_idle
        dev[D_USED, n, best] += need
        dev[D_FRAC, n, best] += 1.0
        out_devices[i, 0] = best
        out_share[i] = need
    ints[n, N_CPU_USED] += cpu
    ints[n, N_MEM_USED] += mem
    for e in range(pext.shape[0]):
        ext[E_USED, n, e] += pext[e]
    return not idle


@njit(cache=True)
def _unapply(nodes, n, req, devs, share):
    """Undo ``_apply`` of the pod on node n, which took ``devs`` (-1 padded) and ``share`` of devs[0]."""
    dev = nodes.dev
    kind = req.kind
    if kind == WHOLE:
        for j in range(devs.shape[0]):
            d = devs[j]
            if d < 0:
                break
            dev[D_USED, n, d] = 0.0
    elif kind == FRACTION or kind == MEMORY:  # noqa: SIM109 (numba)
        d = devs[0]
        dev[D_USED, n, d] -= share
        if dev[D_USED, n, d] < EPS:
            dev[D_USED, n, d] = 0.0
        dev[D_FRAC, n, d] -= 1.0
    nodes.ints[n, N_CPU_USED] -= req.cpu
    nodes.ints[n, N_MEM_USED] -= req.mem
    pext = req.ext
    for e in range(pext.shape[0]):
        nodes.ext[E_USED, n, e] -= pext[e]


@njit(cache=True)
def _place_all(nodes, pods, sg, sc, out, releasing_first):
    for i in range(pods.ints.shape[0]):
        req = _request(pods, i)
        n = _scan_best(nodes, pods.eligible[pods.ints[i, P_SPEC]], req, sg, sc)
        if n < 0:
            return i
        out.node[i] = n
        out.pipelined[i] = _apply(nodes, n, req, sg, out.devices, out.share, i, releasing_first)
    return pods.ints.shape[0]


@njit(cache=True)
def _unplace_all(nodes, pods, placement, indexed, index):
    for i in range(placement.count - 1, -1, -1):
        n = placement.node[i]
        _unapply(nodes, n, _request(pods, i), placement.devices[i], placement.share[i])
        if indexed:
            _refile(nodes.ints, nodes.dev, n, index)


# -- the bucketed index for whole-GPU pods ------------------------------------------------------

# After the buckets, GpuIndex.bits has SHARED_ROWS rows: row k holds the nodes with a shared device
# that has k / SHARED_ROWS of its share or more unused (row 0: any shared device). A pod needing
# more than that by MARGIN can only fit on a shared device of that row's nodes, whatever the rounding.
SHARED_ROWS = 64
MARGIN = 1e-6
ALL, ONLY, EXCEPT = range(3)


class GpuIndex(NamedTuple):
    """Nodes bucketed by (free whole GPUs, GPU count), each bucket a bitset over ranks.

    Classes group buckets whose placement key is equal (binpack: same free
    count; spread: same free fraction) and are listed best first.

    More bitsets, the last rows of ``bits``, hold the nodes with a device
    that fractional pods share and some room left on it (see
    ``SHARED_ROWS``): the only nodes where a fraction can go other than on
    a device nothing holds (see ``_indexed_best_fraction``).
    """

    bits: np.ndarray  # uint64[B + SHARED_ROWS, W]: bit r set = node of rank r in the bucket (or row)
    counts: np.ndarray  # int64[B]: nodes per bucket
    bucket_of: np.ndarray  # int64[N]: current bucket of each node slot, -1 = not indexed
    node_of_rank: np.ndarray  # int64[64 W]: node slot of each rank, -1 = none
    class_start: np.ndarray  # int64[C + 1]
    class_buckets: np.ndarray  # int64[B]
    strategy_gpu: int


def build_gpu_index(nodes: NodeArrays, in_scope: np.ndarray, strategy_gpu: str = "binpack") -> GpuIndex:
    """Index the GPU nodes of ``in_scope`` (bool[N]); ranks must be 0..R-1 over those nodes and unique."""
    sg = STRATEGIES[strategy_gpu]
    ints = nodes.ints
    g = nodes.dev.shape[2]
    slots = np.flatnonzero(in_scope & (ints[:, N_GPUS] > 0))
    n_ranks = int(ints[slots, N_RANK].max()) + 1 if slots.size else 1
    words = (n_ranks + 63) // 64
    n_buckets = (g + 1) * (g + 1)
    node_of_rank = np.full(words * 64, -1, dtype=np.int64)
    ranks = ints[slots, N_RANK]
    if np.unique(ranks).size != ranks.size:
        raise ValueError("nodes.ints: ranks of indexed nodes must be unique")
    node_of_rank[ranks] = slots
    # classes: bucket (free, total) ordered by the placement key, equal keys together
    keys = []
    for total in range(1, g + 1):
        for free in range(total + 1):
            keys.append((-free if sg == BINPACK else free / total, free * (g + 1) + total))
    keys.sort(key=lambda kv: -kv[0])
    class_start = [0]
    class_buckets = []
    for i, (key, b) in enumerate(keys):
        if i > 0 and key != keys[i - 1][0]:
            class_start.append(len(class_buckets))
        class_buckets.append(b)
    class_start.append(len(class_buckets))
    index = GpuIndex(
        np.zeros((n_buckets + SHARED_ROWS, words), dtype=np.uint64),
        np.zeros(n_buckets, dtype=np.int64),
        np.full(ints.shape[0], -1, dtype=np.int64),
        node_of_rank,
        np.array(class_start, dtype=np.int64),
        np.array(class_buckets, dtype=np.int64),
        sg,
    )
    _index_all(nodes, slots.astype(np.int64), index)
    return index


def rebucket(nodes: NodeArrays, index: GpuIndex, slot: int) -> None:
    """Re-file node ``slot`` in ``index`` after its devices changed outside ``place``/``unplace``."""
    _refile(nodes.ints, nodes.dev, slot, index)


@njit(cache=True)
def _index_all(nodes, slots, index):
    for i in range(slots.shape[0]):
        n = slots[i]
        index.bucket_of[n] = 0
        index.counts[0] += 1
        rank = nodes.ints[n, N_RANK]
        index.bits[0, rank >> 6] |= np.uint64(1) << np.uint64(rank & 63)
        _refile(nodes.ints, nodes.dev, n, index)


@njit(cache=True)
def _refile(ints, dev, n, index):
    """Move node n to the bucket of its free whole GPUs now, and into the shared rows its devices allow."""
    bits = index.bits
    counts = index.counts
    bucket_of = index.bucket_of
    old = bucket_of[n]
    if old < 0:
        return
    gpus = ints[n, N_GPUS]
    _, free = _free_whole(dev, n, gpus)
    g1 = dev.shape[2] + 1
    new = free * g1 + gpus
    rank = ints[n, N_RANK]
    w = rank >> 6
    bit = np.uint64(1) << np.uint64(rank & 63)
    bits[old, w] &= ~bit
    bits[new, w] |= bit
    counts[old] -= 1
    counts[new] += 1
    bucket_of[n] = new
    holds = False
    least = 2.0  # use of the least used shared device
    for d in range(gpus):
        if dev[D_FRAC, n, d] > 0:
            holds = True
            least = min(least, dev[D_USED, n, d])
    first = bits.shape[0] - SHARED_ROWS
    for k in range(SHARED_ROWS):
        if holds and least <= 1.0 + EPS - k / SHARED_ROWS:
            bits[first + k, w] |= bit
        else:
            bits[first + k, w] &= ~bit


@njit(cache=True)
def _first_fit_in_bucket(index, b, nodes, elig, req, idle, below_rank):
    """Lowest-rank node of bucket b, rank < below_rank, where the whole-GPU pod fits."""
    bits, node_of = index.bits, index.node_of_rank
    ints, dev, ext = nodes.ints, nodes.dev, nodes.ext
    whole, cpu, mem, pext = req.whole, req.cpu, req.mem, req.ext
    for w in range(bits.shape[1]):
        word = bits[b, w]
        while word != 0:
            low = word & (~word + np.uint64(1))
            r = w * 64 + _bit_index(low)
            if r >= below_rank:
                return -1
            word ^= low
            n = node_of[r]
            if not elig[n]:
                continue
            idle_w, free_w = _free_whole(dev, n, ints[n, N_GPUS])
            if idle:
                if idle_w >= whole and _fits_rest(ints, ext, n, cpu, mem, pext, True):
                    return n
            elif free_w >= whole and _fits_rest(ints, ext, n, cpu, mem, pext, False):
                return n
    return -1


@njit(cache=True)
def _bit_index(x):
    i = 0
    while x > np.uint64(1):
        x >>= np.uint64(1)
        i += 1
    return i


@njit(cache=True)
def _indexed_best_whole(nodes, elig, req, index):
    """``_scan_best`` for a whole-GPU pod, from the index: the lowest rank of the best class it fits in."""
    g1 = nodes.dev.shape[2] + 1
    big = 1 << 62
    class_start = index.class_start
    for idle in (True, False):
        for c in range(class_start.shape[0] - 1):
            best = -1
            best_rank = big
            for j in range(class_start[c], class_start[c + 1]):
                b = index.class_buckets[j]
                if b // g1 < req.whole or index.counts[b] == 0:
                    continue
                n = _first_fit_in_bucket(index, b, nodes, elig, req, idle, best_rank)
                if n >= 0:
                    best = n
                    best_rank = nodes.ints[n, N_RANK]
            if best >= 0:
                return best
    return -1


@njit(cache=True)
def _better(tier, key, rank, best, best_tier, best_key, best_rank):
    return (
        best < 0
        or tier > best_tier
        or (tier == best_tier and key > best_key)
        or (tier == best_tier and key == best_key and rank < best_rank)
    )


@njit(cache=True)
def _first_fraction_fit_in_bucket(index, b, shared, among, nodes, elig, req, sg, sc, idle, below):
    """Lowest-rank node of bucket b, rank < below, where the pod fits (idle: with the idle tier), among
    (ALL) its nodes, (ONLY) those of row ``shared`` or (EXCEPT) the others."""
    bits, node_of = index.bits, index.node_of_rank
    ints, dev, ext = nodes.ints, nodes.dev, nodes.ext
    for w in range(bits.shape[1]):
        word = bits[b, w]
        if among == ONLY:
            word &= bits[shared, w]
        elif among == EXCEPT:
            word &= ~bits[shared, w]
        while word != 0:
            low = word & (~word + np.uint64(1))
            r = w * 64 + _bit_index(low)
            if r >= below:
                return -1
            word ^= low
            n = node_of[r]
            if not elig[n]:
                continue
            ok, tier, _ = _evaluate(ints, dev, ext, n, req, sg, sc)
            if ok and (tier >= 100 or not idle):
                return n
    return -1


@njit(cache=True)
def _indexed_best_fraction(nodes, elig, req, sg, sc, index):
    """``_scan_best`` for a fraction or gpu-memory pod, from the index. A node without a shared device the
    pod might fit on can only take it on a device nothing holds (so it needs a free one); its tier is 0 or
    100 and its key that of its bucket, so the best of those is the lowest rank of the best class. Under
    binpack a node with such a shared device may score +1000 and is evaluated one by one; under spread
    it scores like the others and joins the class search, in every bucket."""
    ints, dev, ext = nodes.ints, nodes.dev, nodes.ext
    bits, node_of = index.bits, index.node_of_rank
    best = -1
    best_tier = -1
    best_key = 0.0
    best_rank = 0
    need = req.share
    if req.kind == MEMORY:
        most = 0  # the largest device memory gives the smallest share
        for n in range(ints.shape[0]):
            most = max(most, ints[n, N_DEV_MEM])
        need = max(device_share(req.kind, req.share, req.gpu_mem, most), 0.0)
    k = int((need - MARGIN) * SHARED_ROWS)  # the largest k with k / SHARED_ROWS <= need - MARGIN
    shared = bits.shape[0] - SHARED_ROWS + min(max(k, 0), SHARED_ROWS - 1)
    for w in range(bits.shape[1] if sg == BINPACK else 0):
        word = bits[shared, w]
        while word != 0:
            low = word & (~word + np.uint64(1))
            r = w * 64 + _bit_index(low)
            word ^= low
            n = node_of[r]
            if not elig[n]:
                continue
            ok, tier, key = _evaluate(ints, dev, ext, n, req, sg, sc)
            if ok and _better(tier, key, ints[n, N_RANK], best, best_tier, best_key, best_rank):
                best, best_tier, best_key, best_rank = n, tier, key, ints[n, N_RANK]
    g1 = nodes.dev.shape[2] + 1
    big = 1 << 62
    other = -1
    class_start = index.class_start
    for idle in (True, False):
        for c in range(class_start.shape[0] - 1):
            found_rank = big
            for j in range(class_start[c], class_start[c + 1]):
                b = index.class_buckets[j]
                if index.counts[b] == 0:
                    continue
                # nodes outside the shared row need a free device; under binpack the row is done
                if sg == BINPACK:
                    among = EXCEPT
                    if b // g1 < 1:
                        continue
                else:
                    among = ALL if b // g1 >= 1 else ONLY
                n = _first_fraction_fit_in_bucket(
                    index, b, shared, among, nodes, elig, req, sg, sc, idle, found_rank
                )
                if n >= 0:
                    other = n
                    found_rank = ints[n, N_RANK]
            if other >= 0:
                break
        if other >= 0:
            break
    if other >= 0:
        ok, tier, key = _evaluate(ints, dev, ext, other, req, sg, sc)
        if _better(tier, key, ints[other, N_RANK], best, best_tier, best_key, best_rank):
            best = other
    return best


@njit(cache=True)
def _place_all_indexed(nodes, pods, sg, sc, out, index, releasing_first):
    for i in range(pods.ints.shape[0]):
        req = _request(pods, i)
        elig = pods.eligible[pods.ints[i, P_SPEC]]
        if req.kind == WHOLE:
            n = _indexed_best_whole(nodes, elig, req, index)
        elif req.kind == FRACTION or req.kind == MEMORY:  # noqa: SIM109 (numba)
            n = _indexed_best_fraction(nodes, elig, req, sg, sc, index)
        else:
            n = _scan_best(nodes, elig, req, sg, sc)
        if n < 0:
            return i
        out.node[i] = n
        out.pipelined[i] = _apply(nodes, n, req, sg, out.devices, out.share, i, releasing_first)
        _refile(nodes.ints, nodes.dev, n, index)
    return pods.ints.shape[0]


# -- how many copies of a pod each node has room for (pending reasons) ---------------------------


def room(nodes: NodeArrays, pods: PodArrays, row: int, limit: int) -> np.ndarray:
    """Per node slot, how many copies of pod ``row`` fit on free (idle + releasing) resources, up to ``limit``."""
    return _room(nodes, pods, row, int(limit))


@njit(cache=True)
def _binpack_fit(nodes, n, req):
    """(feasible, tier) of the pod on node n, as binpack ranks it."""
    ok, tier, _ = _evaluate(nodes.ints, nodes.dev, nodes.ext, n, req, BINPACK, BINPACK)
    return ok, tier


@njit(cache=True)
def _room(nodes, pods, row, limit):
    req = _request(pods, row)
    elig = pods.eligible[pods.ints[row, P_SPEC]]
    n_nodes = nodes.ints.shape[0]
    out = np.zeros(n_nodes, dtype=np.int64)
    g = nodes.dev.shape[2]
    od = np.full((1, max(g, 1)), -1, dtype=np.int64)
    osh = np.zeros(1)
    for n in range(n_nodes):
        if not elig[n]:
            continue
        one = NodeArrays(
            nodes.ints[n : n + 1].copy(), nodes.dev[:, n : n + 1].copy(), nodes.ext[:, n : n + 1].copy()
        )
        c = 0
        while c < limit:
            ok, _ = _binpack_fit(one, 0, req)
            if not ok:
                break
            od[0, :] = -1
            _apply(one, 0, req, BINPACK, od, osh, 0, False)
            c += 1
        out[n] = c
    return out


# -- the cluster as a placement policy sees it (libs/muster/scheduler/policy_placement.py) -------------

# columns of a view row: then one column per device slot, milli of the device free (-1 absent)
V_CPU_FREE, V_MEM_FREE, V_CPU_CAP, V_MEM_CAP, V_GPUS = range(5)
V_DEV = 5
MILLI = 1000


def view_rows(nodes: NodeArrays, slots: np.ndarray, idle: bool) -> np.ndarray:
    """Rows of ``slots`` as ``muster.kernels.policies`` sees nodes: free cpu, memory and milli per device,
    on idle resources (``idle``) or on free ones (idle + releasing, where pods are pipelined)."""
    out = np.zeros((slots.shape[0], V_DEV + nodes.dev.shape[2]), dtype=np.int64)
    _view_rows(nodes, np.ascontiguousarray(slots, dtype=np.int64), idle, out)
    return out


@njit(cache=True)
def _view_rows(nodes, slots, idle, out):
    for i in range(slots.shape[0]):
        _view_row(nodes, slots[i], idle, out[i])


@njit(cache=True)
def _view_row(nodes, n, idle, row):
    """A device is 1000 exactly when a whole-GPU pod could take it (``_free_whole``); a shared one shows
    its unused share rounded down to whole milli."""
    ints = nodes.ints
    dev = nodes.dev
    cpu = ints[n, N_CPU_CAP] - ints[n, N_CPU_USED]
    mem = ints[n, N_MEM_CAP] - ints[n, N_MEM_USED]
    if idle:
        cpu -= ints[n, N_CPU_REL]
        mem -= ints[n, N_MEM_REL]
    gpus = ints[n, N_GPUS]
    row[V_CPU_FREE] = cpu
    row[V_MEM_FREE] = mem
    row[V_CPU_CAP] = ints[n, N_CPU_CAP]
    row[V_MEM_CAP] = ints[n, N_MEM_CAP]
    row[V_GPUS] = gpus
    for d in range(dev.shape[2]):
        if d >= gpus:
            row[V_DEV + d] = -1
            continue
        used = dev[D_USED, n, d]
        rel = dev[D_REL, n, d] if idle else 0.0
        if used <= EPS and rel <= EPS:
            row[V_DEV + d] = MILLI
        else:
            milli = np.floor((1.0 - used - rel) * MILLI + 1e-6)
            row[V_DEV + d] = min(max(np.int64(milli), 0), MILLI - 1)


def changed_rows(nodes: NodeArrays, slots: np.ndarray, rows: np.ndarray, idle: bool) -> np.ndarray:
    """Positions in ``slots`` whose view row differs from ``rows`` (which are brought up to date)."""
    return _changed_rows(nodes, slots, rows, idle)


@njit(cache=True)
def _changed_rows(nodes, slots, rows, idle):
    out = np.empty(slots.shape[0], dtype=np.int64)
    k = 0
    tmp = np.empty(rows.shape[1], dtype=np.int64)
    for i in range(slots.shape[0]):
        _view_row(nodes, slots[i], idle, tmp)
        same = True
        for c in range(tmp.shape[0]):
            if tmp[c] != rows[i, c]:
                same = False
                break
        if not same:
            rows[i, :] = tmp
            out[k] = i
            k += 1
    return out[:k]


def first_fit_per_class(
    nodes: NodeArrays,
    pods: PodArrays,
    row: int,
    ranked_slots: np.ndarray,
    class_of: np.ndarray,
    n_classes: int,
    idle: bool,
) -> np.ndarray:
    """Per class of ``class_of`` (indexed by position in ``ranked_slots``, which is in rank order), the
    first slot where pod ``row`` fits (on idle resources when ``idle``, else on free ones), -1 if none.
    Fitting is exactly ``_evaluate``'s, so a policy choosing among these refuses nothing binpack would
    place."""
    return _first_fit_per_class(nodes, pods, row, ranked_slots, class_of, n_classes, idle)


@njit(cache=True)
def _first_fit_per_class(nodes, pods, row, ranked, class_of, n_classes, idle):
    req = _request(pods, row)
    elig = pods.eligible[pods.ints[row, P_SPEC]]
    first = np.full(n_classes, -1, dtype=np.int64)
    # nodes of one class differ only in what the view leaves out: extended resources, the eligible mask
    by_class = True
    for e in range(req.ext.shape[0]):
        if req.ext[e] != 0:
            by_class = False
    known = np.zeros(n_classes, dtype=np.int64)  # 0 unknown, 1 fits, -1 does not (when by_class)
    for i in range(ranked.shape[0]):
        n = ranked[i]
        c = class_of[i]
        if c < 0 or first[c] >= 0 or not elig[n]:
            continue
        if by_class and known[c] < 0:
            continue
        ok, tier = _binpack_fit(nodes, n, req)
        if ok and (not idle or tier % 1000 >= 100):
            first[c] = n
        elif by_class:
            known[c] = -1
    return first


def commit_on(
    nodes: NodeArrays,
    pods: PodArrays,
    row: int,
    node: int,
    device: int,
    out: Placement,
    i: int,
    index: GpuIndex | None = None,
    releasing_first: bool = False,
) -> None:
    """Apply pod ``row`` on ``node`` (where it must fit), recording it in row ``i`` of ``out``. A fraction
    or gpu-memory pod goes on ``device`` if it fits there (idle first), else where binpack would put it;
    whole GPUs are the lowest-numbered idle devices, then releasing ones (the other way round with
    ``releasing_first``, see ``place``)."""
    out.pipelined[i] = _apply_on(nodes, pods, row, node, device, out, i, releasing_first)
    out.node[i] = node
    if index is not None:
        _refile(nodes.ints, nodes.dev, node, index)


@njit(cache=True)
def _device_fits(dev, n, d, need, idle):
    if d < 0 or d >= dev.shape[2]:
        return False
    if dev[D_FRAC, n, d] <= 0 and dev[D_USED, n, d] > EPS:
        return False
    u = dev[D_USED, n, d] + need
    if idle:
        u += dev[D_REL, n, d]
    return u <= 1.0 + EPS


@njit(cache=True)
def _apply_on(nodes, pods, row, n, d, out, i, releasing_first):
    """``_apply`` with the device of a shared pod chosen by the caller (``d``), when it fits there."""
    req = _request(pods, row)
    out.devices[i, :] = -1
    out.share[i] = 0.0
    if req.kind == FRACTION or req.kind == MEMORY:  # noqa: SIM109 (numba)
        ints = nodes.ints
        dev = nodes.dev
        need = device_share(req.kind, req.share, req.gpu_mem, ints[n, N_DEV_MEM])
        gpus = ints[n, N_GPUS]
        # on idle resources whenever the node has them, as _apply does
        idle = _fits_rest(ints, nodes.ext, n, req.cpu, req.mem, req.ext, True) and _device_fit(
            dev, n, gpus, need, True
        )
        if d < gpus and _device_fits(dev, n, d, need, idle):
            dev[D_USED, n, d] += need
            dev[D_FRAC, n, d] += 1.0
            out.devices[i, 0] = d
            out.share[i] = need
            ints[n, N_CPU_USED] += req.cpu
            ints[n, N_MEM_USED] += req.mem
            for e in range(req.ext.shape[0]):
                nodes.ext[E_USED, n, e] += req.ext[e]
            return not idle
    return _apply(nodes, n, req, BINPACK, out.devices, out.share, i, releasing_first)
