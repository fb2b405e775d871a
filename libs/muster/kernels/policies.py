"""GPU placement policies: choose a node and the device(s) for one pod.

Every policy sees the same struct-of-arrays cluster (`NodeArrays`) and one
request (`PodRequest`), scores every feasible node (higher is better, ties to
the lowest node index, so callers order nodes by name), and then picks the
devices inside the winner. Whole-GPU requests always take the lowest-numbered
idle devices; only fractional requests are placed by the policy's own device
rule.

Policies (`POLICIES`):

* ``random``   -- a uniformly random feasible node, a random device that fits.
* ``bestfit``  -- least leftover CPU and GPU, each normalised by the largest
  node, weighted 0.5/0.5, scored as a whole number 0..100 (FGD paper baseline).
* ``packing``  -- partly used GPU first, then idle GPUs of a used node, then
  the smallest empty node (the paper's GpuPacking tiers).
* ``binpack``  -- KAI: nodes with a shared device the fraction fits on first,
  then fewest idle GPUs (CPU pods: least free CPU); most used device first.
* ``spread``   -- KAI: largest idle fraction of GPUs (CPU pods: of CPU);
  idle devices first.
* ``fgd``      -- fragmentation gradient descent: the smallest increase of the
  fragmentation that the workload's typical shapes would see, through the
  paper's sigmoid and whole-number score.
* ``fgd-pack`` -- ours: FGD's idea with a stronger measure and a scarcity cost.
  The measure of a node is (a) the idle GPU milli left stranded after
  filling the node with as many copies of each typical shape as its devices
  *and* its free CPU allow (FGD asks only whether one copy fits, so CPU spent
  on a GPU-dense node and half-filled devices both count), plus (b) FGD's own
  fragmentation with weight 12 (it counts a whole node as lost to a shape
  that no longer fits there at all; a heavier weight measured better on the
  multi-GPU traces). On top of the increase of that measure, a pod pays
  for the GPU milli it takes from a model in proportion to that model's
  *pressure*: the share of the model's capacity that the shapes restricted
  to a subset of models would need if a cluster's worth of the typical
  demand arrived, each restricted shape spread over the models it accepts by
  their capacity (weight 3). So pods that run anywhere leave scarce models
  to the pods that can only run there; with no restricted shapes the cost is
  zero. The node with the smallest total wins, in 10-milli buckets so that
  near-equal nodes fall to the lowest index and fill in a fixed order
  (`FGD_PACK_KNOBS`); inside it, the device with the smallest exact increase.
  The caller chooses the shapes; the openb bench gives fgd-pack FGD's list
  plus the rare shapes that only a small part of the cluster can host.

Randomness is only what the caller passes in (two uniforms per pod), so a
run is a pure function of its inputs.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from muster.kernels.jit import njit
from muster.kernels.policy_registry import (  # noqa: F401  (re-exported: callers name them here)
    BESTFIT,
    BINPACK,
    DEFAULT_POLICY,
    FGD,
    FGD_PACK,
    PACKING,
    POLICIES,
    RANDOM,
    SPREAD,
    Policy,
)

MILLI = 1000
ANY_MODEL = np.int64(-1)  # bitmask accepting every GPU model
MAX_MODELS = 63

# fgd-pack's knobs: [0] bucket width of the increase in milli (0: FGD's
# whole-number sigmoid score instead); tie-break weights [1] per idle GPU
# left, [2] per free GPU, [3] per free CPU (8 x share of the largest node);
# [4] weight of FGD's own fragmentation added to the stranded measure;
# [5] cost per GPU milli taken, times the model's pressure (`_model_pressure`).
# Ties after all of them go to the lowest node index. [4] and [5] were tuned
# on seeds 42-44 of default, gpuspec10/20/25 and multigpu30/40, then checked
# with 10 seeds on every openb trace.
FGD_PACK_KNOBS = np.array([10.0, 0.0, 0.0, 0.0, 12.0, 3.0])


class NodeArrays(NamedTuple):
    """Per-node state; device capacity is MILLI, absent devices are -1."""

    cpu_free: np.ndarray  # int64[n], millicores
    mem_free: np.ndarray  # int64[n], bytes or MiB (consistent with the pods)
    dev_free: np.ndarray  # int64[n, max_gpus], milli per device, -1 absent
    model: np.ndarray  # int64[n], GPU model index 0..62
    cpu_cap: np.ndarray  # int64[n]
    mem_cap: np.ndarray  # int64[n]
    kind: np.ndarray  # int64[n], equal for nodes with equal static attributes


class PodRequest(NamedTuple):
    """One pod: `gpu_milli` < MILLI means a fraction of one device."""

    cpu: int
    mem: int
    num_gpu: int
    gpu_milli: int
    model_mask: int = -1


class ShapeArrays(NamedTuple):
    """The workload's typical request shapes and their weights (sum 1)."""

    cpu: np.ndarray  # int64[s]
    num_gpu: np.ndarray  # int64[s]
    gpu_milli: np.ndarray  # int64[s]
    model_mask: np.ndarray  # int64[s]
    weight: np.ndarray  # float64[s]
    mem: np.ndarray  # int64[s], a representative memory request (0: not limiting)


class PodColumns(NamedTuple):
    """Pods to place in order, one array per field of ``PodRequest``."""

    cpu: np.ndarray  # int64[p]
    mem: np.ndarray  # int64[p]
    num_gpu: np.ndarray  # int64[p]
    gpu_milli: np.ndarray  # int64[p]
    model_mask: np.ndarray  # int64[p]


class Scoring(NamedTuple):
    """How a policy scores nodes, fixed for a run: the policy, its knobs, the typical shapes and the
    models' pressure (``_model_pressure``, zero unless fgd-pack)."""

    code: int
    knobs: np.ndarray  # float64[6], see FGD_PACK_KNOBS
    shapes: ShapeArrays
    pressure: np.ndarray  # float64[MAX_MODELS]


class Placement(NamedTuple):
    """The chosen node (-1: nothing fits) and device indices."""

    node: int
    devices: tuple[int, ...]


def empty_shapes() -> ShapeArrays:
    """No typical shapes (for policies that do not use them)."""
    z = np.zeros(0, dtype=np.int64)
    return ShapeArrays(z, z, z, z, np.zeros(0, dtype=np.float64), z)


def make_nodes(
    cpu: np.ndarray, mem: np.ndarray, gpus: np.ndarray, model: np.ndarray, *, max_gpus: int | None = None
) -> NodeArrays:
    """An empty cluster from per-node capacities; `gpus` counts devices."""
    cpu = _int_array("nodes.cpu", cpu)
    mem = _int_array("nodes.mem", mem)
    gpus = _int_array("nodes.gpus", gpus)
    model = _int_array("nodes.model", model)
    n = cpu.shape[0]
    for name, a in (("nodes.mem", mem), ("nodes.gpus", gpus), ("nodes.model", model)):
        if a.shape != (n,):
            raise ValueError(f"{name}: expected {n} entries, got {a.shape[0]}")
    if n and (cpu.min() < 0 or mem.min() < 0 or gpus.min() < 0):
        raise ValueError("nodes: capacities must be non-negative")
    if n and (model.min() < 0 or model.max() >= MAX_MODELS):
        raise ValueError(f"nodes.model: indices must be in 0..{MAX_MODELS - 1}")
    width = int(gpus.max()) if n else 0
    width = max(width, max_gpus or 0, 1)
    dev = np.full((n, width), -1, dtype=np.int64)
    for i in range(n):
        dev[i, : gpus[i]] = MILLI
    statics = np.stack([model, cpu, mem, gpus], axis=1) if n else np.zeros((0, 4), np.int64)
    _, kind = np.unique(statics, axis=0, return_inverse=True)
    return NodeArrays(
        cpu.copy(), mem.copy(), dev, model, cpu.copy(), mem.copy(), kind.reshape(-1).astype(np.int64)
    )


def validate_nodes(nodes: NodeArrays) -> None:
    """Raise ValueError naming the field when the arrays are inconsistent."""
    n = nodes.cpu_free.shape[0]
    for name in NodeArrays._fields:
        a = getattr(nodes, name)
        if not isinstance(a, np.ndarray) or a.dtype != np.int64:
            raise ValueError(f"nodes.{name}: expected an int64 numpy array")
        if a.shape[0] != n:
            raise ValueError(f"nodes.{name}: expected {n} rows, got {a.shape[0]}")
    if nodes.dev_free.ndim != 2:
        raise ValueError("nodes.dev_free: expected a 2-D array (nodes x max_gpus)")
    if n and (nodes.dev_free.max() > MILLI or nodes.dev_free.min() < -1):
        raise ValueError(f"nodes.dev_free: values must be -1 (absent) or 0..{MILLI}")


def validate_pod(pod: PodRequest, where: str = "pod") -> None:
    """Raise ValueError naming the field when a request is malformed."""
    if pod.cpu < 0 or pod.mem < 0:
        raise ValueError(f"{where}.cpu/mem: must be non-negative")
    if pod.num_gpu < 0:
        raise ValueError(f"{where}.num_gpu: must be non-negative")
    if not 0 <= pod.gpu_milli <= MILLI:
        raise ValueError(f"{where}.gpu_milli: must be in 0..{MILLI}")
    if pod.gpu_milli < MILLI and pod.num_gpu > 1:
        raise ValueError(f"{where}.gpu_milli: a fraction is only allowed with num_gpu == 1")
    if (pod.num_gpu == 0) != (pod.gpu_milli == 0):
        raise ValueError(f"{where}.gpu_milli: must be 0 exactly when num_gpu is 0")


def place(
    policy: str,
    nodes: NodeArrays,
    pod: PodRequest,
    *,
    rng: np.random.Generator | None = None,
    shapes: ShapeArrays | None = None,
) -> Placement:
    """Choose node and devices for `pod` under `policy`, without changing `nodes`."""
    spec = _policy(policy)
    validate_nodes(nodes)
    validate_pod(pod)
    if spec.code == RANDOM and rng is None:
        raise ValueError("rng: the random policy needs a seeded numpy Generator")
    scoring = _scoring(spec, nodes, shapes, FGD_PACK_KNOBS)
    u = rng.random(2) if rng is not None else np.zeros(2)
    frag = _node_frags(scoring, nodes) if spec.needs_shapes else np.zeros(nodes.cpu_free.shape[0])
    out = np.full(max(pod.num_gpu, 1), -1, dtype=np.int64)
    node = _choose(scoring, nodes, frag, PodRequest(*_pod_tuple(pod)), u[0], u[1], out)
    if node < 0:
        return Placement(-1, ())
    return Placement(int(node), tuple(int(d) for d in out[: pod.num_gpu]))


def commit(nodes: NodeArrays, pod: PodRequest, placement: Placement) -> None:
    """Subtract `pod` from the chosen node and devices, in place."""
    if placement.node < 0:
        raise ValueError("placement.node: nothing to commit for an unplaced pod")
    if len(placement.devices) != pod.num_gpu:
        raise ValueError("placement.devices: one device per requested GPU")
    n = placement.node
    nodes.cpu_free[n] -= pod.cpu
    nodes.mem_free[n] -= pod.mem
    for d in placement.devices:
        nodes.dev_free[n, d] -= pod.gpu_milli


def simulate(
    policy: str,
    nodes: NodeArrays,
    pods: list[PodRequest] | tuple[np.ndarray, ...],
    *,
    uniforms: np.ndarray | None = None,
    shapes: ShapeArrays | None = None,
    knobs: np.ndarray | None = None,
) -> np.ndarray:
    """Place `pods` one by one (failures skipped), mutating `nodes`; node per pod, -1 if none fit.

    `pods` is a list of PodRequest or a tuple of arrays (cpu, mem, num_gpu,
    gpu_milli, model_mask); `uniforms` is float64[len(pods), 2] in [0, 1).
    """
    spec = _policy(policy)
    validate_nodes(nodes)
    cols = _pod_columns(pods)
    n_pods = cols.cpu.shape[0]
    if uniforms is None:
        if spec.code == RANDOM:
            raise ValueError("uniforms: the random policy needs pre-drawn uniforms")
        uniforms = np.zeros((n_pods, 2))
    uniforms = np.ascontiguousarray(uniforms, dtype=np.float64)
    if uniforms.shape != (n_pods, 2):
        raise ValueError(f"uniforms: expected shape ({n_pods}, 2), got {uniforms.shape}")
    knobs = FGD_PACK_KNOBS if knobs is None else np.ascontiguousarray(knobs, dtype=np.float64)
    return _simulate(_scoring(spec, nodes, shapes, knobs), nodes, cols, uniforms)


def node_fragmentation(nodes: NodeArrays, shapes: ShapeArrays, policy: str = "fgd") -> np.ndarray:
    """Expected idle GPU milli per node that the typical shapes cannot use, as `policy` measures it."""
    validate_nodes(nodes)
    shapes = _check_shapes(shapes)
    return _node_frags(Scoring(_policy(policy).code, FGD_PACK_KNOBS, shapes, np.zeros(MAX_MODELS)), nodes)


# ---------------------------------------------------------------- helpers


def _policy(name: str) -> Policy:
    try:
        return POLICIES[name]
    except KeyError:
        raise ValueError(f"policy: unknown {name!r}; known: {', '.join(POLICIES)}") from None


def _int_array(name: str, a) -> np.ndarray:
    arr = np.asarray(a)
    if arr.ndim != 1:
        raise ValueError(f"{name}: expected a 1-D array")
    if arr.size and not np.issubdtype(arr.dtype, np.integer):
        raise ValueError(f"{name}: expected integers")
    return arr.astype(np.int64)


def _check_shapes(shapes: ShapeArrays) -> ShapeArrays:
    s = shapes.cpu.shape[0]
    for name in ShapeArrays._fields:
        a = getattr(shapes, name)
        if a.shape != (s,):
            raise ValueError(f"shapes.{name}: expected {s} entries")
    ints = {
        f: np.ascontiguousarray(getattr(shapes, f), dtype=np.int64)
        for f in ShapeArrays._fields
        if f != "weight"
    }
    return ShapeArrays(weight=np.ascontiguousarray(shapes.weight, dtype=np.float64), **ints)


def _shapes_for(spec: Policy, shapes: ShapeArrays | None) -> ShapeArrays:
    if spec.needs_shapes:
        if shapes is None or shapes.cpu.shape[0] == 0:
            raise ValueError(f"shapes: policy {spec.name!r} needs the workload's typical shapes")
        return _check_shapes(shapes)
    return empty_shapes()


def _scoring(spec: Policy, nodes: NodeArrays, shapes: ShapeArrays | None, knobs: np.ndarray) -> Scoring:
    shapes = _shapes_for(spec, shapes)
    pressure = _model_pressure(nodes, shapes) if spec.code == FGD_PACK else np.zeros(MAX_MODELS)
    return Scoring(spec.code, knobs, shapes, pressure)


def _pod_tuple(pod: PodRequest) -> tuple[int, int, int, int, int]:
    return (int(pod.cpu), int(pod.mem), int(pod.num_gpu), int(pod.gpu_milli), int(pod.model_mask))


def _pod_columns(pods) -> PodColumns:
    if isinstance(pods, tuple) and len(pods) == 5 and all(isinstance(a, np.ndarray) for a in pods):
        cols = PodColumns(*(np.ascontiguousarray(a, dtype=np.int64) for a in pods))
        n = cols[0].shape[0]
        if any(c.shape != (n,) for c in cols):
            raise ValueError("pods: all five columns need the same length")
        g, m = cols[2], cols[3]
        if n and (g.min() < 0 or m.min() < 0 or m.max() > MILLI):
            raise ValueError("pods.num_gpu/gpu_milli: out of range")
        if n and (((m < MILLI) & (g > 1)).any() or ((g == 0) != (m == 0)).any()):
            raise ValueError("pods.gpu_milli: fraction with num_gpu > 1, or gpu/milli zero mismatch")
        return cols
    for i, p in enumerate(pods):
        validate_pod(p, f"pods[{i}]")
    if not pods:
        z = np.zeros(0, dtype=np.int64)
        return PodColumns(z, z, z, z, z)
    return PodColumns(
        *(np.array(c, dtype=np.int64) for c in zip(*(_pod_tuple(p) for p in pods), strict=True))
    )


def _model_pressure(nodes: NodeArrays, shapes: ShapeArrays) -> np.ndarray:
    """Per model index: how much of that model's GPU capacity the model-constrained shapes would need.

    A shape whose mask leaves out some of the cluster's GPU models brings its
    share of the shapes' GPU demand (weight x GPUs x share); that share of a
    demand as large as the whole cluster is spread over the models it accepts
    in proportion to their capacity. Shapes that accept every model press on none.
    """
    out = np.zeros(MAX_MODELS)
    ndev = (nodes.dev_free >= 0).sum(axis=1).astype(np.float64)
    cap = np.bincount(nodes.model, weights=ndev, minlength=MAX_MODELS)[:MAX_MODELS]
    demand = shapes.weight * shapes.num_gpu * shapes.gpu_milli
    total = demand.sum()
    if cap.sum() <= 0 or total <= 0:
        return out
    present = cap > 0
    for s in range(shapes.cpu.shape[0]):
        accepts = ((int(shapes.model_mask[s]) >> np.arange(MAX_MODELS)) & 1 == 1) & present
        if demand[s] == 0 or not accepts.any() or accepts.sum() == present.sum():
            continue
        out[accepts] += demand[s] / total * cap.sum() / cap[accepts].sum()
    return out


# ---------------------------------------------------------------- jitted core


@njit(cache=True)
def _node_frags(scoring, nodes):
    """The fragmentation of every node as ``scoring`` measures it."""
    n = nodes.cpu_free.shape[0]
    out = np.zeros(n)
    for i in range(n):
        out[i] = _frag(scoring, nodes.cpu_free[i], nodes.mem_free[i], nodes.dev_free[i], nodes.model[i])
    return out


@njit(cache=True)
def _allowed(mask, model):
    return (mask >> model) & 1 == 1


@njit(cache=True)
def _fits(nodes, n, pod):
    if nodes.cpu_free[n] < pod.cpu or nodes.mem_free[n] < pod.mem:
        return False
    if pod.num_gpu == 0:
        return True
    if not _allowed(pod.model_mask, nodes.model[n]):
        return False
    row = nodes.dev_free[n]
    cnt = 0
    for d in range(row.shape[0]):
        if row[d] >= pod.gpu_milli:
            cnt += 1
    return cnt >= pod.num_gpu


@njit(cache=True)
def _frag_row(cpu_free, row, model, shapes, dev, take):
    """Expected unusable idle GPU milli; `dev` (-1: none) is reduced by `take` first."""
    total = 0
    for d in range(row.shape[0]):
        f = row[d] - take if d == dev else row[d]
        if f > 0:
            total += f
    if total == 0:
        return 0.0
    frag = 0.0
    for s in range(shapes.cpu.shape[0]):
        m = shapes.gpu_milli[s]
        w = shapes.weight[s]
        if m == 0 or not _allowed(shapes.model_mask[s], model) or cpu_free < shapes.cpu[s]:
            frag += w * total
            continue
        cnt = 0
        small = 0
        for d in range(row.shape[0]):
            f = row[d] - take if d == dev else row[d]
            if f < 0:
                continue
            if f >= m:
                cnt += 1
            else:
                small += f
        frag += w * (small if cnt >= shapes.num_gpu[s] else total)
    return frag


@njit(cache=True)
def _stranded_row(cpu_free, mem_free, row, model, shapes, dev, take):
    """Expected idle GPU milli left unusable when the node is filled with copies of a typical shape."""
    total = 0
    for d in range(row.shape[0]):
        f = row[d] - take if d == dev else row[d]
        if f > 0:
            total += f
    if total == 0:
        return 0.0
    out = 0.0
    for s in range(shapes.cpu.shape[0]):
        m = shapes.gpu_milli[s]
        k = shapes.num_gpu[s]
        w = shapes.weight[s]
        if m == 0 or not _allowed(shapes.model_mask[s], model):
            out += w * total
            continue
        g = 0
        for d in range(row.shape[0]):
            f = row[d] - take if d == dev else row[d]
            if f >= m:
                g += f // m
        if k > 1:
            g = g // k
        c = shapes.cpu[s]
        copies = g if c == 0 else min(g, cpu_free // c)
        if shapes.mem[s] > 0:
            copies = min(copies, mem_free // shapes.mem[s])
        out += w * (total - copies * k * m)
    return out


@njit(cache=True)
def _measure(code, knobs, shapes, cpu_free, mem_free, row, model, dev, take):
    # code, knobs and shapes rather than the Scoring: this runs per device tried, and taking the
    # shapes out of a Scoring costs a reference count per array each time
    if code == FGD_PACK:
        s = _stranded_row(cpu_free, mem_free, row, model, shapes, dev, take)
        if knobs[4] != 0.0:
            s += knobs[4] * _frag_row(cpu_free, row, model, shapes, dev, take)
        return s
    return _frag_row(cpu_free, row, model, shapes, dev, take)


@njit(cache=True)
def _frag(scoring, cpu_free, mem_free, row, model):
    return _measure(scoring.code, scoring.knobs, scoring.shapes, cpu_free, mem_free, row, model, -1, 0)


@njit(cache=True)
def _frag_whole(code, knobs, shapes, cpu_free, mem_free, row, model, k):
    """Fragmentation after taking the `k` lowest-numbered idle devices."""
    tmp = row.copy()
    left = k
    for d in range(tmp.shape[0]):
        if left == 0:
            break
        if tmp[d] == 1000:
            tmp[d] = 0
            left -= 1
    return _measure(code, knobs, shapes, cpu_free, mem_free, tmp, model, -1, 0)


@njit(cache=True)
def _sigmoid_score(delta):
    # FGD's node score: int(sigmoid(-increase / 1000) * 100).
    return float(np.int64(100.0 / (1.0 + np.exp(delta / 1000.0))))


@njit(cache=True)
def _idle_count(row):
    c = 0
    for d in range(row.shape[0]):
        if row[d] == 1000:
            c += 1
    return c


@njit(cache=True)
def _gpu_free_total(row):
    t = 0
    for d in range(row.shape[0]):
        if row[d] > 0:
            t += row[d]
    return t


@njit(cache=True)
def _pristine(nodes, n):
    if nodes.cpu_free[n] != nodes.cpu_cap[n] or nodes.mem_free[n] != nodes.mem_cap[n]:
        return False
    row = nodes.dev_free[n]
    for d in range(row.shape[0]):  # noqa: SIM110 - a plain loop compiles in nopython mode
        if row[d] != -1 and row[d] != 1000:
            return False
    return True


@njit(cache=True)
def _packing_score(row, k, m):
    """The paper's GpuPacking tiers (whole number 0..100)."""
    ndev = 0
    idle = 0
    for d in range(row.shape[0]):
        if row[d] >= 0:
            ndev += 1
            if row[d] == 1000:
                idle += 1
    if idle == ndev:
        return float(max(33 - idle, idle))
    # take fitting devices, least free first (stable by index)
    order = np.argsort(row, kind="mergesort")
    need = k
    idle_used = 0
    shared_pct = 0
    for j in range(order.shape[0]):
        if need == 0:
            break
        d = order[j]
        if row[d] >= m:
            need -= 1
            if row[d] == 1000:
                idle_used += 1
            shared_pct += row[d] * 100 // 1000
    if idle_used > 0:
        return float(max(50 - idle_used, 33))
    return float(max(100 - shared_pct // 10, 50))


@njit(cache=True)
def _node_score(code, knobs, shapes, pressure, nodes, n, frag_now, pod, max_cpu, max_gpu):
    # the Scoring's fields one by one: this runs per node, and taking arrays out of a tuple costs
    # a reference count per array each time
    cpu = pod.cpu
    k = pod.num_gpu
    m = pod.gpu_milli
    row = nodes.dev_free[n]
    if code == BESTFIT:
        s = 0.0
        s += (nodes.cpu_free[n] - cpu) / max_cpu * 0.5
        s += (_gpu_free_total(row) - k * m) / max_gpu * 0.5
        return float(np.int64((1.0 - s) * 100.0))
    if code == PACKING:
        if m == 0:
            return 0.0
        return _packing_score(row, k, m)
    if code == BINPACK:
        # equivalent ordering to KAI's 1000*shared_fit + 9*(1 - normalised free)
        if k == 0:
            return -float(nodes.cpu_free[n])
        bonus = 0.0
        if m < 1000:
            for d in range(row.shape[0]):
                if 0 < row[d] < 1000 and row[d] >= m:
                    bonus = 1000.0
                    break
        return bonus - _idle_count(row)
    if code == SPREAD:
        if k == 0:
            cap = nodes.cpu_cap[n]
            return nodes.cpu_free[n] / cap if cap > 0 else 0.0
        ndev = 0
        for d in range(row.shape[0]):
            if row[d] >= 0:
                ndev += 1
        return _idle_count(row) / ndev
    # FGD family: best over candidate devices of -(increase in fragmentation)
    cf = nodes.cpu_free[n] - cpu
    mf = nodes.mem_free[n] - pod.mem
    model = nodes.model[n]
    if k == 0:
        inc = _measure(code, knobs, shapes, cf, mf, row, model, -1, 0) - frag_now
    elif m < 1000:
        inc = 1e300
        for d in range(row.shape[0]):
            if row[d] >= m:
                v = _measure(code, knobs, shapes, cf, mf, row, model, d, m) - frag_now
                if v < inc:
                    inc = v
    else:
        inc = _frag_whole(code, knobs, shapes, cf, mf, row, model, k) - frag_now
    if code == FGD:
        return _sigmoid_score(inc)
    # taking GPUs of a model that constrained shapes need costs in proportion
    # to how much of that model they would need
    inc += knobs[5] * pressure[model] * k * m
    # fgd-pack: the increase in buckets of knobs[0] milli (0: FGD's whole-number
    # sigmoid), then the knob-weighted tie-breaks, all of them keeping nodes full.
    primary = np.floor(-inc / knobs[0]) if knobs[0] > 0 else _sigmoid_score(inc)
    return (
        primary * 1e6
        - knobs[1] * _idle_count(row)
        - knobs[2] * _gpu_free_total(row) / 1000.0
        - knobs[3] * nodes.cpu_free[n] / max_cpu * 8.0
    )


@njit(cache=True)
def _pick_devices(code, knobs, shapes, nodes, n, frag_now, pod, u1, out):
    k = pod.num_gpu
    m = pod.gpu_milli
    row = nodes.dev_free[n]
    if k == 0:
        return
    if m >= 1000:
        j = 0
        for d in range(row.shape[0]):
            if j == k:
                break
            if row[d] == 1000:
                out[j] = d
                j += 1
        return
    best = -1
    if code == RANDOM:
        cnt = 0
        for d in range(row.shape[0]):
            if row[d] >= m:
                cnt += 1
        target = min(np.int64(u1 * cnt), cnt - 1)
        for d in range(row.shape[0]):
            if row[d] >= m:
                if target == 0:
                    best = d
                    break
                target -= 1
    elif code == SPREAD:
        for d in range(row.shape[0]):
            if row[d] >= m and (best < 0 or row[d] > row[best]):
                best = d
    elif code == FGD or code == FGD_PACK:  # noqa: SIM109 - kept explicit for numba
        cf = nodes.cpu_free[n] - pod.cpu
        best_v = 0.0
        for d in range(row.shape[0]):
            if row[d] >= m:
                v = _measure(code, knobs, shapes, cf, nodes.mem_free[n] - pod.mem, row, nodes.model[n], d, m)
                if code == FGD:
                    v = -_sigmoid_score(v - frag_now)
                if best < 0 or v < best_v:
                    best = d
                    best_v = v
    else:
        for d in range(row.shape[0]):
            if row[d] >= m and (best < 0 or row[d] < row[best]):
                best = d
    out[0] = best


@njit(cache=True)
def _choose(scoring, nodes, frag, pod, u0, u1, out):
    """The node for ``pod`` (its devices written to ``out``), -1 if it fits nowhere; u0, u1 uniforms."""
    n_nodes = nodes.cpu_free.shape[0]
    code, knobs, shapes, pressure = scoring.code, scoring.knobs, scoring.shapes, scoring.pressure
    if code == RANDOM:
        cnt = 0
        for n in range(n_nodes):
            if _fits(nodes, n, pod):
                cnt += 1
        if cnt == 0:
            return -1
        target = min(np.int64(u0 * cnt), cnt - 1)
        for n in range(n_nodes):
            if _fits(nodes, n, pod):
                if target == 0:
                    _pick_devices(code, knobs, shapes, nodes, n, 0.0, pod, u1, out)
                    return n
                target -= 1
        return -1
    max_cpu = 1.0
    max_gpu = 1.0
    for n in range(n_nodes):
        max_cpu = max(max_cpu, float(nodes.cpu_cap[n]))
        ndev = 0
        for d in range(nodes.dev_free.shape[1]):
            if nodes.dev_free[n, d] >= 0:
                ndev += 1
        max_gpu = max(max_gpu, float(ndev * 1000))
    n_kinds = 0
    for n in range(n_nodes):
        n_kinds = max(n_kinds, nodes.kind[n] + 1)
    seen = np.zeros(n_kinds, dtype=np.bool_)
    best = -1
    best_s = 0.0
    for n in range(n_nodes):
        if not _fits(nodes, n, pod):
            continue
        # an untouched node scores like every untouched node of its kind; the
        # lowest-numbered one already won any tie
        if _pristine(nodes, n):
            if seen[nodes.kind[n]]:
                continue
            seen[nodes.kind[n]] = True
        s = _node_score(code, knobs, shapes, pressure, nodes, n, frag[n], pod, max_cpu, max_gpu)
        if best < 0 or s > best_s:
            best = n
            best_s = s
    if best >= 0:
        _pick_devices(code, knobs, shapes, nodes, best, frag[best], pod, u1, out)
    return best


@njit(cache=True)
def _simulate(scoring, nodes, pods, uniforms):
    n_nodes = nodes.cpu_free.shape[0]
    frag = np.zeros(n_nodes)
    if scoring.shapes.cpu.shape[0] > 0:
        frag = _node_frags(scoring, nodes)
    placed = np.full(pods.cpu.shape[0], -1, dtype=np.int64)
    out = np.full(max(nodes.dev_free.shape[1], 1), -1, dtype=np.int64)
    for i in range(pods.cpu.shape[0]):
        pod = PodRequest(pods.cpu[i], pods.mem[i], pods.num_gpu[i], pods.gpu_milli[i], pods.model_mask[i])
        n = _choose(scoring, nodes, frag, pod, uniforms[i, 0], uniforms[i, 1], out)
        if n < 0:
            continue
        placed[i] = n
        nodes.cpu_free[n] -= pod.cpu
        nodes.mem_free[n] -= pod.mem
        for j in range(pod.num_gpu):
            nodes.dev_free[n, out[j]] -= pod.gpu_milli
        if scoring.shapes.cpu.shape[0] > 0:
            frag[n] = _frag(scoring, nodes.cpu_free[n], nodes.mem_free[n], nodes.dev_free[n], nodes.model[n])
    return placed
