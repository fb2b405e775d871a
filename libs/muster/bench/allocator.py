"""Speed of the allocator core: fair share, placement kernels, whole cycles.

Each row: name, value, unit, target, naive_ratio (how many times faster
than the naive version: the same fair-share code run as plain Python, the
unbucketed scan for placement). Timings are medians of a few runs after a
warm-up (Numba compiles on first call).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

import numpy as np

from muster import events as ev
from muster.kernels import fairshare
from muster.kernels import placement as pl

GI = 2**30


def _median(fn: Callable[[], object], runs: int) -> float:
    fn()
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def _queues(n: int, seed: int = 0) -> fairshare.QueueArrays:
    """Two levels: n/10 departments, the rest teams spread over them."""
    rng = np.random.default_rng(seed)
    top = max(1, n // 10)
    parent = np.concatenate([np.full(top, -1), rng.integers(0, top, n - top)]).astype(np.int64)
    request = rng.integers(0, 40, (n, 3)).astype(float)
    for q in range(n - 1, top - 1, -1):
        request[parent[q]] += request[q]
    return fairshare.QueueArrays(
        parent=parent,
        priority=(rng.integers(0, 3, n) * 50 + 50).astype(np.int64),
        quota=rng.integers(-1, 5, (n, 3)).astype(float),
        limit=np.where(rng.random((n, 3)) < 0.2, 30.0, -1.0),
        weight=rng.integers(0, 4, (n, 3)).astype(float),
        request=request,
        usage=np.zeros((n, 3)),
    )


def bench_fair_share(n: int, runs: int) -> dict:
    queues = _queues(n)
    total = np.array([n * 8.0, n * 64000.0, n * 512.0 * GI])
    t = _median(lambda: fairshare.fair_share(queues, total), runs)
    tree = fairshare._children(queues.parent)

    def naive() -> None:
        fairshare._fair_share.py_func(tree, queues, total, 1.0, np.zeros((n, 3)))

    _patch_python(True)
    try:
        t_naive = _median(naive, 1)
    finally:
        _patch_python(False)
    return {
        "name": f"fair share, {n} queues",
        "value": t * 1e3,
        "unit": "ms",
        "target": "<= 10 ms at 10k queues",
        "naive_ratio": t_naive / t,
    }


_jitted: dict[str, object] = {}


def _patch_python(on: bool) -> None:
    """Swap the kernel's helpers for their Python originals, so the naive run is Python throughout."""
    names = ("_divide", "_up_to_fair_share", "_requestable", "_remaining_requested", "_satisfied")
    for name in names:
        if on:
            _jitted[name] = getattr(fairshare, name)
            setattr(fairshare, name, getattr(fairshare, name).py_func)
        elif name in _jitted:
            setattr(fairshare, name, _jitted.pop(name))


def _cluster(n_nodes: int, gpus: int = 8) -> pl.NodeArrays:
    nodes = pl.empty_nodes(n_nodes, gpus)
    nodes.ints[:, pl.N_GPUS] = gpus
    nodes.ints[:, pl.N_DEV_MEM] = 80 * GI
    nodes.ints[:, pl.N_CPU_CAP] = 128000
    nodes.ints[:, pl.N_MEM_CAP] = 1024 * GI
    nodes.ints[:, pl.N_RANK] = np.arange(n_nodes)
    return nodes


def _pods(n_pods: int, n_nodes: int, share: float = 0.0) -> pl.PodArrays:
    """Single-GPU pods, or pods of ``share`` of a device."""
    ints = np.zeros((n_pods, pl.P_INT_COLS), dtype=np.int64)
    ints[:, pl.P_KIND] = pl.FRACTION if share else pl.WHOLE
    ints[:, pl.P_WHOLE] = 0 if share else 1
    ints[:, pl.P_CPU] = 4000
    ints[:, pl.P_MEM] = 16 * GI
    return pl.PodArrays(
        ints,
        np.full(n_pods, share),
        np.zeros((n_pods, 0), dtype=np.int64),
        np.ones((1, n_nodes), dtype=np.bool_),
    )


def bench_placement(n_nodes: int, n_pods: int, naive_pods: int, share: float = 0.0) -> dict:
    """Single-GPU pods (or fractions of ``share``) placed one by one in-kernel (binpack) until the cluster is
    full."""
    pods = _pods(n_pods, n_nodes, share)
    warm = _cluster(8)
    pl.place(warm, _pods(4, 8, share), index=pl.build_gpu_index(warm, np.ones(8, dtype=np.bool_)))
    pl.place(warm, _pods(4, 8, share))
    nodes = _cluster(n_nodes)
    index = pl.build_gpu_index(nodes, np.ones(n_nodes, dtype=np.bool_))
    t = time.perf_counter()
    placed = pl.place(nodes, pods, index=index).count
    rate = placed / (time.perf_counter() - t)
    naive_nodes = _cluster(n_nodes)
    few = _pods(min(naive_pods, n_pods), n_nodes, share)
    t = time.perf_counter()
    naive_placed = pl.place(naive_nodes, few).count
    naive_rate = naive_placed / (time.perf_counter() - t)
    what = f"{share:g}-GPU" if share else "single-GPU"
    return {
        "name": f"placement, {n_pods} {what} pods on {n_nodes} nodes x 8",
        "value": rate,
        "unit": "pods/s",
        "target": ">= 200000 pods/s",
        "naive_ratio": rate / naive_rate,
    }


def _backlog(n_nodes: int, n_pods: int, pods_per_job: int):
    """An allocator over n_nodes x 8 GPUs and 10 queues with ``n_pods`` single-GPU pods pending."""
    from muster.scheduler.config import AllocatorConfig
    from muster.scheduler.engine import Allocator

    alloc = Allocator(AllocatorConfig())
    for i in range(n_nodes):
        alloc.apply(
            ev.NodeRegistered(
                node=ev.NodeSpec(
                    name=f"node-{i:05d}",
                    resources=ev.Resources(gpu=8, gpu_memory=80 * GI, cpu=128000, memory=1024 * GI),
                )
            )
        )
    for q in range(10):
        alloc.apply(
            ev.QueueUpserted(
                queue=ev.QueueSpec(
                    name=f"team-{q}", order=q, resources={"gpu": ev.QueueResource(quota=n_nodes * 8 / 20)}
                )
            )
        )
    spec = ev.PodSpec(count=pods_per_job, resources=ev.Resources(gpu=1, cpu=4000, memory=16 * GI))
    for j in range(n_pods // pods_per_job):
        alloc.apply(
            ev.PodGroupCreated(
                name=f"job-{j:06d}",
                queue=f"team-{j % 10}",
                min_available=pods_per_job,
                submitted_at=float(j),
                pods=[spec],
            )
        )
    return alloc


def bench_cycle(n_nodes: int, n_pods: int, pods_per_job: int, runs: int) -> dict:
    """A whole allocate cycle: 10 queues, every pod pending, the cluster starting empty."""
    alloc = _backlog(n_nodes, n_pods, pods_per_job)
    t = _median(lambda: alloc.cycle(0.0, cycle=1), runs)
    return {
        "name": f"allocate cycle, {n_nodes} nodes x 8, {n_pods} pending pods in gangs of {pods_per_job}",
        "value": t,
        "unit": "s",
        "target": "<= 1 s",
        "naive_ratio": None,
    }


def bench_full_cluster_cycle(n_nodes: int, n_pods: int, runs: int) -> dict:
    """The cycle after: the first cycle's binds confirmed (the cluster full), the rest still pending plus
    1% new arrivals, so consolidate, reclaim and preempt walk the whole backlog."""
    alloc = _backlog(n_nodes, n_pods, 1)
    first = alloc.cycle(0.0, cycle=1)
    alloc.apply(first.completed)
    for d in first.decisions:
        alloc.apply(d)
        alloc.apply(ev.PodBound(job=d.job, pod=d.pod, node=d.node, gpus=d.gpus, at=0.0))
    spec = ev.PodSpec(resources=ev.Resources(gpu=1, cpu=4000, memory=16 * GI))
    for j in range(n_pods, n_pods + n_pods // 100):
        alloc.apply(
            ev.PodGroupCreated(
                name=f"job-{j:06d}", queue=f"team-{j % 10}", submitted_at=float(j), pods=[spec]
            )
        )

    def cycle() -> None:
        alloc._idle = None  # an idle result would be reused: measure the work, not the cache
        alloc.cycle(1.0, cycle=2)

    t = _median(cycle, runs)
    running = len(first.decisions)
    return {
        "name": f"cycle over a full cluster, {n_nodes} nodes x 8, {running} pods running, "
        f"{n_pods - running + n_pods // 100} pending",
        "value": t,
        "unit": "s",
        "target": "<= 1 s",
        "naive_ratio": None,
    }


def bench_idle_cycle(n_nodes: int, runs: int) -> dict:
    """A cycle with nothing pending and nothing changed: what the live service pays while idle."""
    from muster.scheduler.config import AllocatorConfig
    from muster.scheduler.engine import Allocator

    alloc = Allocator(AllocatorConfig())
    for i in range(n_nodes):
        alloc.apply(ev.NodeRegistered(node=ev.NodeSpec(name=f"node-{i:05d}", resources=ev.Resources(gpu=8))))
    alloc.cycle(0.0, cycle=0)
    t = _median(lambda: alloc.cycle(0.0, cycle=1), runs)
    return {
        "name": f"idle cycle, {n_nodes} nodes",
        "value": t * 1e6,
        "unit": "us",
        "target": None,
        "naive_ratio": None,
    }


def run(quick: bool = False) -> list[dict]:
    """All allocator benchmarks; ``quick`` shrinks them to a smoke run of a few seconds."""
    if quick:
        return [
            bench_fair_share(100, 3),
            bench_placement(100, 1000, 200),
            bench_cycle(100, 1000, 4, 1),
            bench_full_cluster_cycle(100, 1000, 1),
            bench_idle_cycle(100, 3),
        ]
    return [
        bench_fair_share(1000, 5),
        bench_fair_share(10000, 5),
        bench_placement(1000, 10000, 2000),
        bench_placement(10000, 100000, 2000),
        bench_placement(10000, 100000, 1000, share=0.5),
        bench_cycle(10000, 100000, 4, 3),
        bench_cycle(10000, 100000, 1, 3),
        bench_full_cluster_cycle(10000, 100000, 3),
        bench_idle_cycle(10000, 5),
    ]


if __name__ == "__main__":
    for row in run():
        print(row)
