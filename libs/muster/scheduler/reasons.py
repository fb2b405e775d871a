"""Why a job waits, in words a user understands."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

import numpy as np

from muster import mig, pod_affinity, runtimes
from muster import placement_predicates as predicates
from muster.kernels import placement as pl

from .state import Job, Offer, PodReq

RES_NAMES = ("gpu", "cpu", "memory")

_HOW_TO_GET = {
    runtimes.COMMAND: "`muster agent` on a machine adds a node that runs them",
    runtimes.IMAGE: "only a node with a container runtime runs them, and `muster agent` has none",
    runtimes.SIMULATED: "`muster apply` adds simulated nodes",
}


def amount(r: int, value: float) -> str:
    """A quantity in user units: gpu devices, cpu cores (from millicores), memory with a binary suffix."""
    if r == 1:
        value = value / 1000.0
    if r == 2:
        for suffix, size in (("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10)):
            if value >= size:
                return f"{_num(value / size)}{suffix}"
        return f"{_num(value)}"
    return _num(value)


def _num(v: float) -> str:
    r = round(v, 2)
    return str(int(r)) if r == int(r) else f"{r:g}"


def over_limit(queue: str, r: int, limit: float, allocated: float, request: float) -> str:
    return (
        f"queue {queue} is at its limit of {amount(r, limit)} {RES_NAMES[r]} "
        f"({amount(r, allocated)} in use, the job needs {amount(r, request)} more)"
    )


def non_preemptible_over_quota(queue: str, r: int, quota: float, allocated_np: float, request: float) -> str:
    return (
        f"the job is not preemptible and queue {queue} would exceed its quota of {amount(r, quota)} "
        f"{RES_NAMES[r]} ({amount(r, allocated_np)} in use by non-preemptible jobs, "
        f"the job needs {amount(r, request)})"
    )


def unknown_queue(queue: str) -> str:
    return f"queue {queue} does not exist"


def not_leaf(queue: str) -> str:
    return f"queue {queue} is not a leaf queue; only leaf queues hold jobs"


def describe(req: PodReq) -> str:
    parts = []
    if req.kind == pl.MEMORY:
        parts.append(f"{amount(2, req.gpu_memory)} of gpu memory")
    elif req.kind != pl.CPU_ONLY:
        # devices or a fraction; a MIG pod's GPUs are its instances, listed with the extended resources
        parts.append(f"{_num(req.gpu)} gpu")
    if req.cpu:
        parts.append(f"{amount(1, req.cpu)} cpu")
    if req.memory:
        parts.append(f"{amount(2, req.memory)} memory")
    for name, v in req.ext:
        parts.append(f"{v} {name}")
    return ", ".join(parts) if parts else "no resources"


def _nodes(n: int) -> str:
    return f"{n} node" if n == 1 else f"{n} nodes"


def _cluster(pool: str) -> str:
    return "the cluster" if pool == "default" else f"pool {pool}"


def cannot_run(runtime: str, pool: str, offered: tuple[str, ...]) -> str:
    """No node of the pool runs pods of ``runtime``; its nodes run ``offered`` only."""
    text = f"no node can run {runtime} pods: {_cluster(pool)} has {' and '.join(offered)} nodes only"
    how = _HOW_TO_GET.get(runtime)
    return f"{text}; {how}" if how else text


def no_gpus(pool: str, req: PodReq, k: int) -> str:
    """The pod needs a GPU and no node of the pool has one."""
    needs = "each pod needs" if k > 1 else "the pod needs"
    return f"{_cluster(pool)} has no GPUs ({needs} {describe(req)})"


def no_fit(
    job: Job,
    pods: list[int],
    failed_row: int,
    nodes: pl.NodeArrays,
    arrays: pl.PodArrays,
    offer: Callable[[str, str], Offer],
    where: str = "",
) -> str:
    """A gang (or pod) that fits nowhere: no node runs its kind or the cluster has no GPUs for it, or how
    many nodes have room for how many of its pods. ``offer(pool, runtime)``: what the pool's nodes offer a
    pod of that runtime (asked only when the pod fits no node)."""
    req = job.pods[pods[failed_row]]
    k = len(pods)
    elig = arrays.eligible[arrays.ints[failed_row, pl.P_SPEC]]
    n_elig = int(np.count_nonzero(elig))
    what = f"gang of {k} pods does not fit{where}" if k > 1 else f"pod does not fit{where}"
    needs_gpu = req.kind != pl.CPU_ONLY
    if n_elig == 0:
        found = offer(job.pool, req.runtime)
        if found.runtimes and not found.nodes:
            return cannot_run(req.runtime, job.pool, found.runtimes)
        if found.runtimes and needs_gpu and not found.all_gpus:
            return no_gpus(job.pool, req, k)
        limits = []
        if req.node_selector:
            limits.append("node_selector " + ", ".join(f"{a}={b}" for a, b in req.node_selector))
        if req.gpu_models:
            limits.append("gpu_models " + ", ".join(req.gpu_models))
        if req.ext:
            limits.append("extended resources " + ", ".join(n for n, _ in req.ext))
        if req.node_affinity:
            limits.append("required node affinity")
        if req.gpu_request != mig.CPU_ONLY:
            # a node's MIG strategy takes one kind of GPU pod only (muster.mig.node_admits)
            limits += [f"kind of GPU request under {mig.STRATEGY_LABEL}={s}" for s in found.mig_strategies]
        repelled = predicates.untolerated(req.tolerations, found.taints)
        taints = ""
        if repelled:
            taints = "taints it does not tolerate: " + ", ".join(map(predicates.describe_taint, repelled))
        if limits:
            text = f"{what}: no schedulable node in pool {job.pool} matches its {' and '.join(limits)}"
            return f"{text}; {taints}" if taints else text
        if taints:
            return f"{what}: no node in pool {job.pool} tolerates it ({taints})"
        return f"{what}: no schedulable node in pool {job.pool}"
    rooms = pl.room(nodes, arrays, failed_row, k)
    counts = Counter(int(c) for c in rooms[elig] if c > 0)
    if not counts:
        if needs_gpu and not nodes.ints[:, pl.N_GPUS].any():
            return no_gpus(job.pool, req, k)  # no node served has one, so none of the pool's
        return f"{what}: no node has room for a pod needing {describe(req)} ({_nodes(n_elig)} considered)"
    parts = []
    for c in sorted(counts, reverse=True):
        n = counts[c]
        have = "has" if n == 1 else "have"
        parts.append(f"{_nodes(n)} {have} room for {c} pod{'s' if c != 1 else ''}{' each' if n > 1 else ''}")
    return f"{what}: " + ", ".join(parts) + f" (each pod needs {describe(req)})"


def invalid_pod(message: str) -> str:
    return f"invalid pod request: {message}"


def with_pod_affinity(why: str, req: PodReq) -> str:
    """A no-fit reason of a pod placed under pod (anti-)affinity: the reason read without those rules,
    and the rules, which narrow the nodes further."""
    terms = [f"affinity to {pod_affinity.describe_term(t)}" for t in req.pod_affinity]
    terms += [f"anti-affinity to {pod_affinity.describe_term(t)}" for t in req.pod_anti_affinity]
    if not terms:
        return f"{why}; and other pods' required anti-affinity may keep it out of some domains"
    return f"{why}; and it requires pod {' and '.join(terms)}"
