"""Small builders so allocator tests read as the case, not the setup."""

from __future__ import annotations

import itertools

from muster import events as ev
from muster.scheduler.config import AllocatorConfig
from muster.scheduler.engine import Allocator

GI = 2**30
_order = itertools.count()


def gpu_nodes(
    n: int,
    gpus: int = 8,
    *,
    prefix: str = "node",
    cpu: float = 64,
    memory: int = 512 * GI,
    gpu_memory: int = 80 * GI,
    pool: str = "default",
    labels: dict[str, str] | None = None,
    gpu_model: str | None = None,
    unschedulable: bool = False,
    runtimes: list[str] | None = None,
    taints: list[ev.Taint] | None = None,
) -> list[ev.Event]:
    """``n`` nodes named prefix-0.. with ``gpus`` devices each (cpu in cores), running ``runtimes``."""
    return [
        ev.NodeRegistered(
            node=ev.NodeSpec(
                name=f"{prefix}-{i}",
                pool=pool,
                labels=dict(labels or {}),
                gpu_model=gpu_model,
                unschedulable=unschedulable,
                runtimes=list(runtimes or []),
                taints=list(taints or []),
                resources=ev.Resources(
                    gpu=gpus, gpu_memory=gpu_memory if gpus else 0, cpu=int(cpu * 1000), memory=memory
                ),
            )
        )
        for i in range(n)
    ]


def node(name: str, gpus: int = 8, **kw) -> ev.Event:
    e = gpu_nodes(1, gpus, prefix="x", **kw)[0]
    return ev.NodeRegistered(
        node=ev.NodeSpec(**{**{f: getattr(e.node, f) for f in e.node.__struct_fields__}, "name": name})
    )


def queue(
    name: str,
    *,
    gpu_quota: float = 0,
    gpu_limit: float = -1,
    gpu_weight: float = 1,
    parent: str | None = None,
    priority: int = 100,
    cpu: tuple[float, float, float] | None = None,
    memory: tuple[float, float, float] | None = None,
) -> ev.Event:
    """A queue with a gpu quota/limit/weight; cpu/memory as (quota, weight, limit) in base units if given."""
    res = {"gpu": ev.QueueResource(quota=gpu_quota, over_quota_weight=gpu_weight, limit=gpu_limit)}
    if cpu is not None:
        res["cpu"] = ev.QueueResource(quota=cpu[0], over_quota_weight=cpu[1], limit=cpu[2])
    if memory is not None:
        res["memory"] = ev.QueueResource(quota=memory[0], over_quota_weight=memory[1], limit=memory[2])
    return ev.QueueUpserted(
        queue=ev.QueueSpec(name=name, parent=parent, priority=priority, resources=res, order=next(_order))
    )


def gang_job(
    queue: str,
    pods: int = 1,
    gpu: float = 1,
    *,
    name: str,
    cpu: float = 1,
    memory: int = GI,
    gpu_memory: int = 0,
    min_available: int | None = None,
    priority: int = 50,
    preemptible: bool | None = None,
    submitted_at: float = 0.0,
    node_selector: dict | None = None,
    gpu_models: list[str] | None = None,
    topology: ev.Topology | None = None,
    pool: str = "default",
    runtime: str = "",
    tolerations: list[ev.Toleration] | None = None,
    node_affinity: list[ev.NodeSelectorTerm] | None = None,
) -> ev.Event:
    """A job of ``pods`` identical pods; a gang of all of them unless ``min_available`` says otherwise."""
    return ev.PodGroupCreated(
        name=name,
        queue=queue,
        pool=pool,
        priority=priority,
        preemptible=priority < 100 if preemptible is None else preemptible,
        min_available=pods if min_available is None else min_available,
        submitted_at=submitted_at,
        topology=topology,
        runtime=runtime,
        pods=[
            ev.PodSpec(
                count=pods,
                node_selector=dict(node_selector or {}),
                gpu_models=list(gpu_models or []),
                tolerations=list(tolerations or []),
                node_affinity=list(node_affinity or []),
                resources=ev.Resources(gpu=gpu, gpu_memory=gpu_memory, cpu=int(cpu * 1000), memory=memory),
            )
        ],
    )


def allocator(*events: ev.Event | list[ev.Event], config: AllocatorConfig | None = None, **kw) -> Allocator:
    a = Allocator(config or AllocatorConfig(**kw))
    for e in _flat(events):
        a.apply(e)
    return a


def _flat(events):
    for e in events:
        if isinstance(e, list):
            yield from _flat(e)
        else:
            yield e


def confirm(a: Allocator, decisions, at: float = 0.0) -> None:
    """Apply decisions and the binder's confirmations, as the simulated fleet would."""
    for d in decisions:
        a.apply(d)
    for d in decisions:
        if isinstance(d, ev.BindRequested):
            a.apply(ev.PodBound(job=d.job, pod=d.pod, node=d.node, gpus=d.gpus, gpu_share=d.gpu_share, at=at))
        elif isinstance(d, ev.EvictionRequested):
            a.apply(ev.PodEvicted(job=d.job, pod=d.pod, node=d.node))


def run(a: Allocator, cycles: int = 10) -> int:
    """Cycle until nothing changes (at most ``cycles``); returns the cycles run."""
    for c in range(1, cycles + 1):
        out = a.cycle(float(c), cycle=c)
        a.apply(out.completed)
        confirm(a, out.decisions, at=float(c))
        if not out.decisions:
            return c
    return cycles
