"""The FGD paper's placement protocol on the Alibaba openb trace.

Reconstructed in shared/data/alibaba-gpu-v2023-openb/README.md: an empty
cluster; the pods sorted by name, shuffled by the seed, then topped up with
random copies until the next copy would push the GPU request over 130 % of
capacity (or thinned at random when above it); offered one at a time, never
leaving, failures skipped. After every pod we sample allocated and arrived
GPU milli; the value at an integer arrived-% is the mean allocated-% of the
samples that round (half to even) to it. We report unallocated GPU % =
100 - allocated % at 100 % arrived, mean and sample SD over seeds.

Seeds n mean the paper's seeds 42 .. 42+n-1, fed to numpy's PCG64 (the Go
`math/rand` orders cannot be reproduced, so only the statistics compare).
"""

from __future__ import annotations

import csv
import os
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from muster.kernels import policies as pol

TRACE_DIR_NAME = "alibaba-gpu-v2023-openb"
DEFAULT_NODES = "openb_node_list_gpu_node.csv"
DEFAULT_PODS = "openb_pod_list_default.csv"
FIRST_SEED = 42
INFLATE_RATIO = 1.3
TYPICAL_COVERAGE = 0.95
NARROW_HOST_SHARE = 0.1  # fgd-pack also weighs shapes fewer than 10 % of the GPUs can host
ARRIVED_LEVELS = 131  # integer arrived-% 0..130
HEADLINE_LEVEL = 100

# our policy name -> the paper's label in the published result files
PUBLISHED_LABELS = {
    "random": "01-Random",
    "packing": "04-GpuPacking",
    "bestfit": "05-BestFit",
    "fgd": "06-FGD",
    "fgd-pack": "06-FGD",  # ours, compared with the paper's best
}


def data_dir() -> Path:
    """The shared data folder: $MUSTER_DATA_DIR, else <repo>/../shared/data."""
    env = os.environ.get("MUSTER_DATA_DIR")
    if env:
        return Path(env)
    repo = Path(__file__).resolve().parents[3]
    return repo.parent / "shared" / "data"


def trace_dir() -> Path:
    """Folder of the openb trace (its README, csv/ and published_results/)."""
    return data_dir() / TRACE_DIR_NAME


def csv_dir() -> Path:
    return trace_dir() / "csv"


@dataclass(frozen=True)
class Cluster:
    names: tuple[str, ...]
    models: tuple[str, ...]  # model index -> name ("" for CPU-only nodes)
    cpu: np.ndarray
    mem: np.ndarray
    gpus: np.ndarray
    model: np.ndarray

    @property
    def gpu_milli(self) -> int:
        return int(self.gpus.sum()) * pol.MILLI

    def fresh(self) -> pol.NodeArrays:
        """An empty cluster's arrays, ready for one run."""
        return pol.make_nodes(self.cpu, self.mem, self.gpus, self.model)


@dataclass(frozen=True)
class Trace:
    """Pod requests sorted by name; `mask` is the allowed-model bitmask."""

    name: str
    names: tuple[str, ...]
    cpu: np.ndarray
    mem: np.ndarray
    num_gpu: np.ndarray
    gpu_milli: np.ndarray
    mask: np.ndarray

    def __len__(self) -> int:
        return len(self.names)

    @property
    def total_gpu(self) -> np.ndarray:
        return self.num_gpu * self.gpu_milli


def _read_rows(path: Path, required: tuple[str, ...]) -> list[dict[str, str]]:
    try:
        with open(path, newline="") as f:
            reader = csv.DictReader(f)
            missing = [c for c in required if c not in (reader.fieldnames or [])]
            if missing:
                raise ValueError(f"{path}: missing column(s) {', '.join(missing)}")
            return list(reader)
    except FileNotFoundError:
        raise ValueError(f"{path}: no such file") from None


def _int(path: Path, row_no: int, row: dict[str, str], col: str) -> int:
    raw = (row.get(col) or "").strip()
    try:
        v = int(raw)
    except ValueError:
        raise ValueError(f"{path}: row {row_no}, column {col}: not an integer: {raw!r}") from None
    if v < 0:
        raise ValueError(f"{path}: row {row_no}, column {col}: negative value {v}")
    return v


def load_cluster(path: str | Path) -> Cluster:
    """Nodes of an openb node list, sorted by name."""
    path = Path(path)
    rows = _read_rows(path, ("sn", "cpu_milli", "memory_mib", "gpu", "model"))
    rows.sort(key=lambda r: r["sn"])
    models = sorted({r["model"].strip() for r in rows})
    if len(models) > pol.MAX_MODELS:
        raise ValueError(f"{path}: column model: more than {pol.MAX_MODELS} distinct models")
    index = {m: i for i, m in enumerate(models)}
    cols = {c: [] for c in ("cpu_milli", "memory_mib", "gpu")}
    for i, r in enumerate(rows, start=2):
        for c in cols:
            cols[c].append(_int(path, i, r, c))
    return Cluster(
        names=tuple(r["sn"] for r in rows),
        models=tuple(models),
        cpu=np.array(cols["cpu_milli"], dtype=np.int64),
        mem=np.array(cols["memory_mib"], dtype=np.int64),
        gpus=np.array(cols["gpu"], dtype=np.int64),
        model=np.array([index[r["model"].strip()] for r in rows], dtype=np.int64),
    )


def model_mask(spec: str, models: tuple[str, ...]) -> int:
    """Bitmask of the cluster's models named in a `a|b` gpu_spec; empty = any."""
    spec = spec.strip()
    if not spec:
        return -1
    mask = 0
    for name in spec.split("|"):
        if name in models:
            mask |= 1 << models.index(name)
    return mask


def load_trace(path: str | Path, cluster: Cluster) -> Trace:
    """Pods of an openb pod list, sorted by name, requests validated."""
    path = Path(path)
    rows = _read_rows(path, ("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli"))
    rows.sort(key=lambda r: r["name"])
    cpu, mem, gpu, milli, mask = [], [], [], [], []
    for i, r in enumerate(rows, start=2):
        g, m = _int(path, i, r, "num_gpu"), _int(path, i, r, "gpu_milli")
        if g == 0:
            m = 0  # a CPU pod's share is meaningless; keep the invariant
        if m > pol.MILLI or (g > 1 and m < pol.MILLI) or (g > 0 and m == 0):
            raise ValueError(f"{path}: row {i}, column gpu_milli: {m} is invalid with num_gpu {g}")
        cpu.append(_int(path, i, r, "cpu_milli"))
        mem.append(_int(path, i, r, "memory_mib"))
        gpu.append(g)
        milli.append(m)
        mask.append(model_mask(r.get("gpu_spec") or "", cluster.models))
    return Trace(
        name=path.name,
        names=tuple(r["name"] for r in rows),
        cpu=np.array(cpu, dtype=np.int64),
        mem=np.array(mem, dtype=np.int64),
        num_gpu=np.array(gpu, dtype=np.int64),
        gpu_milli=np.array(milli, dtype=np.int64),
        mask=np.array(mask, dtype=np.int64),
    )


def typical_shapes(
    trace: Trace,
    coverage: float = TYPICAL_COVERAGE,
    use_memory: bool = False,
    *,
    narrow_in: Cluster | None = None,
    narrow_share: float = NARROW_HOST_SHARE,
) -> pol.ShapeArrays:
    """The most frequent (cpu, gpu share, gpu count, models) shapes covering `coverage` of pods.

    With `narrow_in`, every GPU shape that only nodes holding less than
    `narrow_share` of that cluster's GPUs can host (by CPU, GPU count and
    model) is added too, however rare: those are the pods fragmentation
    starves first (`fgd-pack` uses them; FGD's own list leaves them out).
    Memory is not part of the key (CPU-only pods count); each shape carries
    the median memory of its pods, which only `fgd-pack` uses. Weights are
    pod counts renormalised over the chosen shapes. Equal counts are ordered
    by the shape key, for determinism.
    """
    keys = np.stack([trace.cpu, trace.gpu_milli, trace.num_gpu, trace.mask], axis=1)
    uniq, counts = np.unique(keys, axis=0, return_counts=True)
    order = sorted(range(len(uniq)), key=lambda i: (-counts[i], tuple(uniq[i])))
    target = coverage * len(trace)
    chosen, cum = [], 0
    for i in order:
        if cum >= target:
            break
        chosen.append(i)
        cum += counts[i]
    if narrow_in is not None:
        taken = set(chosen)
        chosen += [i for i in order if i not in taken and _narrow(uniq[i], narrow_in, narrow_share)]
    sel = uniq[chosen]
    w = counts[chosen].astype(np.float64)
    mem = np.array(
        [int(np.median(trace.mem[(keys == row).all(axis=1)])) if use_memory else 0 for row in sel],
        dtype=np.int64,
    )
    return pol.ShapeArrays(
        cpu=sel[:, 0].copy(),
        num_gpu=sel[:, 2].copy(),
        gpu_milli=sel[:, 1].copy(),
        model_mask=sel[:, 3].copy(),
        weight=w / w.sum(),
        mem=mem,
    )


def _narrow(key: np.ndarray, cluster: Cluster, share: float) -> bool:
    """A GPU shape (cpu, gpu share, gpu count, mask) that nodes with < `share` of the GPUs can host."""
    cpu, _milli, k, mask = (int(v) for v in key)
    if k == 0:
        return False
    hosts = (cluster.cpu >= cpu) & (cluster.gpus >= k) & ((mask >> cluster.model) & 1 == 1)
    return bool(cluster.gpus[hosts].sum() < share * cluster.gpus.sum())


def policy_shapes(policy: str, trace: Trace, cluster: Cluster) -> pol.ShapeArrays:
    """The typical shapes a shape-driven policy is given: FGD's list, plus narrow shapes for `fgd-pack`."""
    return typical_shapes(trace, narrow_in=cluster if policy == "fgd-pack" else None)


def arrival_order(
    trace: Trace, capacity_milli: int, rng: np.random.Generator, ratio: float = INFLATE_RATIO
) -> np.ndarray:
    """Indices into `trace` in offer order: shuffled, then topped up (or thinned) to `ratio` x capacity.

    The top-up appends copies of uniformly random original pods and stops at
    the first copy whose per-GPU share would push the request over target
    (the artifact compares the share, then adds the pod's whole request).
    """
    order = rng.permutation(len(trace))
    total = int(trace.total_gpu.sum())
    target = ratio * capacity_milli
    if total > target:
        keep = list(order)
        while total > target and keep:
            j = int(rng.integers(len(keep)))
            total -= int(trace.total_gpu[keep[j]])
            del keep[j]
        return np.array(keep, dtype=np.int64)
    extra = []
    while True:
        j = int(rng.integers(len(trace)))
        if total + int(trace.gpu_milli[j]) > target:
            break
        total += int(trace.total_gpu[j])
        extra.append(j)
    return np.concatenate([order, np.array(extra, dtype=np.int64)])


def curve(requests: np.ndarray, placed: np.ndarray, capacity_milli: int) -> np.ndarray:
    """Mean allocated GPU % at each integer arrived % (NaN where no sample)."""
    arrived = np.cumsum(requests)
    used = np.cumsum(np.where(placed, requests, 0))
    level = np.rint(arrived / capacity_milli * 100.0).astype(np.int64)
    alloc = used / capacity_milli * 100.0
    ok = (level >= 0) & (level < ARRIVED_LEVELS)
    sums = np.bincount(level[ok], weights=alloc[ok], minlength=ARRIVED_LEVELS)
    counts = np.bincount(level[ok], minlength=ARRIVED_LEVELS)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)


def filled(alloc: np.ndarray) -> np.ndarray:
    """The curve with levels no sample rounded to (a large pod jumped them) carried from below."""
    out = alloc.copy()
    for i in range(1, out.shape[0]):
        if np.isnan(out[i]):
            out[i] = out[i - 1]
    return out


@dataclass(frozen=True)
class RunResult:
    seed: int
    alloc_curve: np.ndarray
    pods: int
    failed: int
    seconds: float

    @property
    def unallocated_at_100(self) -> float:
        return float(100.0 - self.alloc_curve[HEADLINE_LEVEL])


def run_seed(
    cluster: Cluster, trace: Trace, policy: str, seed: int, shapes: pol.ShapeArrays | None
) -> RunResult:
    """One run of the protocol with one seed."""
    rng = np.random.default_rng(seed)
    order = arrival_order(trace, cluster.gpu_milli, rng)
    uniforms = np.random.default_rng([seed, 1]).random((len(order), 2))
    cols = (
        trace.cpu[order],
        trace.mem[order],
        trace.num_gpu[order],
        trace.gpu_milli[order],
        trace.mask[order],
    )
    nodes = cluster.fresh()
    t0 = time.perf_counter()
    placed = pol.simulate(policy, nodes, cols, uniforms=uniforms, shapes=shapes)
    seconds = time.perf_counter() - t0
    ok = placed >= 0
    alloc = filled(curve(trace.total_gpu[order], ok, cluster.gpu_milli))
    return RunResult(seed, alloc, len(order), int((~ok).sum()), seconds)


def published(trace_name: str, policy: str) -> dict | None:
    """The paper's mean/SD of unallocated GPU % per arrived % for this trace and policy, if any."""
    label = PUBLISHED_LABELS.get(policy)
    path = trace_dir() / "published_results" / "DERIVED_summary_by_arrival.csv"
    if label is None or not path.exists():
        return None
    workload = Path(trace_name).stem
    out: dict[str, dict[str, float]] = {}
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            if r["workload"] == workload and r["sc_policy"] == label:
                out[r["arrived_gpu_pct"]] = {
                    "mean": float(r["unalloc_gpu_pct_mean"]),
                    "sd": float(r["unalloc_gpu_pct_sd"]),
                }
    if not out:
        return None
    return {"policy": label, "by_arrived_pct": out, "at_arrived_100": out.get(str(HEADLINE_LEVEL))}


def run_openb(
    nodes_csv: str | Path | None = None,
    pods_csv: str | Path | None = None,
    seeds: int = 10,
    policy: str = pol.DEFAULT_POLICY,
    *,
    subsample: float | None = None,
) -> dict:
    """The protocol over `seeds` seeds; the cli.md `bench openb` document plus curves.

    `subsample` (0..1) keeps that fraction of nodes and pods (every k-th by
    name) for a quick smoke run; its numbers are not comparable to the paper.
    """
    if seeds < 1:
        raise ValueError("seeds: must be at least 1")
    spec = pol.POLICIES.get(policy)
    if spec is None:
        raise ValueError(f"policy: unknown {policy!r}; known: {', '.join(pol.POLICIES)}")
    nodes_path = Path(nodes_csv) if nodes_csv else csv_dir() / DEFAULT_NODES
    pods_path = Path(pods_csv) if pods_csv else csv_dir() / DEFAULT_PODS
    cluster = load_cluster(nodes_path)
    trace = load_trace(pods_path, cluster)
    if subsample is not None:
        cluster, trace = _subsample(cluster, trace, subsample)
    shapes = policy_shapes(policy, trace, cluster) if spec.needs_shapes else None
    _warm_up(policy, shapes)
    runs = [run_seed(cluster, trace, policy, FIRST_SEED + i, shapes) for i in range(seeds)]
    un = np.array([r.unallocated_at_100 for r in runs])
    curves = np.stack([100.0 - r.alloc_curve for r in runs])
    total_pods = sum(r.pods for r in runs)
    total_s = sum(r.seconds for r in runs)
    mean_curve = curves.mean(axis=0)
    doc = {
        "trace": pods_path.name,
        "policy": policy,
        "seeds": seeds,
        "unallocated_gpu_pct_at_arrived_100": {
            "mean": _r(un.mean()),
            "sd": _r(un.std(ddof=1) if seeds > 1 else 0.0),
        },
        "pods_per_second": _r(total_pods / total_s if total_s > 0 else 0.0, 1),
        "nodes": nodes_path.name,
        "cluster_gpus": cluster.gpu_milli // pol.MILLI,
        "seed_values": [r.seed for r in runs],
        "unallocated_gpu_pct_per_seed": [_r(v) for v in un],
        "failed_pods_per_seed": [r.failed for r in runs],
        "pods_offered_per_seed": [r.pods for r in runs],
        "seconds_per_run": _r(total_s / seeds, 3),
        "unallocated_gpu_pct_by_arrived_pct": {
            str(i): _r(v) for i, v in enumerate(mean_curve) if np.isfinite(v)
        },
        "typical_shapes": int(shapes.cpu.shape[0]) if shapes is not None else None,
        "subsample": subsample,
    }
    ref = published(pods_path.name, policy) if subsample is None else None
    if ref is not None:
        doc["published"] = ref
    return doc


def _warm_up(policy: str, shapes: pol.ShapeArrays | None) -> None:
    # compile (or load the cached kernel) outside the timed runs
    tiny = pol.make_nodes(np.array([1000]), np.array([1]), np.array([1]), np.array([0]))
    pods = (np.array([1]), np.array([1]), np.array([1]), np.array([500]), np.array([-1]))
    pol.simulate(policy, tiny, pods, uniforms=np.zeros((1, 2)), shapes=shapes)


def _r(v: float, nd: int = 3) -> float:
    return round(float(v), nd)


def _subsample(cluster: Cluster, trace: Trace, frac: float) -> tuple[Cluster, Trace]:
    if not 0 < frac <= 1:
        raise ValueError("subsample: must be in (0, 1]")
    step = max(1, round(1 / frac))
    ni = np.arange(0, len(cluster.names), step)
    pi = np.arange(0, len(trace), step)
    c = Cluster(
        tuple(cluster.names[i] for i in ni),
        cluster.models,
        cluster.cpu[ni],
        cluster.mem[ni],
        cluster.gpus[ni],
        cluster.model[ni],
    )
    t = Trace(
        trace.name,
        tuple(trace.names[i] for i in pi),
        trace.cpu[pi],
        trace.mem[pi],
        trace.num_gpu[pi],
        trace.gpu_milli[pi],
        trace.mask[pi],
    )
    return c, t
