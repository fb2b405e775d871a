"""Where a topology-constrained job may go (kai-semantics.md §5.5, §18): the one home of the rule.

A job's constraint (``Job.topology``) names a required and/or a preferred level. With a KAI Topology
behind it (``levels``, widest first) a domain at level i is one value of each level label down to i
(its id: the values joined with "."); nodes missing any of the topology's labels are in no domain.
Without one, the level is a node label on its own and its values are the domains.

Candidates, tried in order until the job's pods all fit inside one: the domains of every level from the
preferred level (the required one if none) up to the required level, deepest level first; with no
required level, at last the whole topology (without a Topology: every node). Within a level the domains
follow the tree parent first, and at each parent the child the job fills most first (KAI's bin-packing
ratio: the request over the free room in its dominant resource), ties by id. A domain is a candidate only if its free GPUs and CPU cover the
pods' sum. At the required level a job whose pods already run is kept to the domains they run in (and
the domains below them).

Allocate places by ``place_in_domain``; the victim solver (reclaim, preempt, consolidate) places the
pending job and every moved victim through it too, so a scenario counts only if each lands inside one
domain of its own constraint.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from muster.kernels import placement as pl
from muster.tolerances import EPS

from .session import Session
from .state import ACTIVE, Job

ROOT = -1
"""The level index of the whole topology (every node that carries its labels)."""


def levels_to_try(job: Job) -> list[int]:
    """Indices into ``constrained_labels(job)`` of the levels tried, deepest first; ``ROOT`` last when
    no level is required."""
    topo = job.topology
    assert topo is not None
    labels = constrained_labels(job)
    required = labels.index(topo.required) if topo.required else ROOT
    if not topo.levels:
        # a bare label: only that level, then anywhere when it is only preferred
        return [0] if topo.required else [0, ROOT]
    start = labels.index(topo.preferred) if topo.preferred else required
    if required == ROOT:
        return [*range(start, -1, -1), ROOT]
    return list(range(start, required - 1, -1))


def constrained_labels(job: Job) -> tuple[str, ...]:
    """The level labels of the job's constraint, widest first: its topology's, or its one bare label."""
    topo = job.topology
    assert topo is not None
    if topo.levels:
        return topo.levels
    return (topo.required or topo.preferred or "",)


def place_in_domain(
    s: Session,
    job: Job,
    pods: list[int],
    attempt: Callable[[np.ndarray | None], int],
    *,
    explain: bool = True,
) -> str | None:
    """Try the candidate domains in order: ``attempt(mask)`` places the pods inside ``mask`` (None: on any
    node) and returns how many it placed, leaving nothing applied unless all were. None once one domain
    holds every pod, else why none did (only "" unless ``explain``)."""
    topo = job.topology
    assert topo is not None
    anywhere: int | None = None
    for level, mask in candidate_masks(s, job, pods):
        count = attempt(mask)
        if count == len(pods):
            return None
        if level == ROOT:
            anywhere = count
    if not explain:
        return ""
    if anywhere is not None:
        return s.no_fit(job, pods, anywhere)
    level = topo.required or topo.preferred or ""
    if len(pods) > 1:
        return f"no {level} domain has room for all {len(pods)} pods of the job"
    return f"no node with a {level} label has room for the pod"


@dataclass
class _Levels:
    """The domains of one list of level labels over a session's nodes (labels do not change within one)."""

    ids: list[list[str]]
    """Per level, its domain ids (values down to that level joined with ".")."""
    index: list[np.ndarray]
    """Per level, each node slot's domain there (-1: the node lacks one of the labels)."""
    parent: list[np.ndarray]
    """Per level, each domain's parent domain one level up (-1 at the widest level)."""


_LEVELS: weakref.WeakKeyDictionary[Session, dict[tuple[str, ...], _Levels]] = weakref.WeakKeyDictionary()


def _levels(s: Session, labels: tuple[str, ...]) -> _Levels:
    by_labels = _LEVELS.setdefault(s, {})
    hit = by_labels.get(labels)
    if hit is not None:
        return hit
    n = s.nodes.ints.shape[0]
    ids: list[list[str]] = [[] for _ in labels]
    seen: list[dict[str, int]] = [{} for _ in labels]
    index = [np.full(n, -1, dtype=np.int64) for _ in labels]
    parents: list[list[int]] = [[] for _ in labels]
    for node in s.state.node_table.nodes.values():
        values = [node.spec.labels.get(label) for label in labels]
        if any(v is None for v in values):
            continue
        up = -1
        for k in range(len(labels)):
            dom = ".".join(values[: k + 1])  # type: ignore[arg-type]
            d = seen[k].get(dom)
            if d is None:
                d = seen[k][dom] = len(ids[k])
                ids[k].append(dom)
                parents[k].append(up)
            index[k][node.slot] = d
            up = d
    hit = by_labels[labels] = _Levels(ids, index, [np.array(p, dtype=np.int64) for p in parents])
    return hit


def candidate_masks(s: Session, job: Job, pods: list[int]) -> list[tuple[int, np.ndarray | None]]:
    """(level, node mask) of each candidate domain, in the order they are tried (see the module's
    docstring); the mask of ``ROOT`` without a Topology is None: every node."""
    labels = constrained_labels(job)
    topo = job.topology
    assert topo is not None
    required = labels.index(topo.required) if topo.required else ROOT
    tree = _levels(s, labels)
    inside = tree.index[-1] >= 0
    if required != ROOT:
        pinned = running_domains(s, job, required)
        if pinned:
            ids = tree.ids[required]
            keep = np.array([dom in pinned for dom in ids] + [False], dtype=np.bool_)
            inside &= keep[tree.index[required]]
    free = _free(s)  # per node: whole GPUs, CPU, memory (idle or releasing)
    # free room of every domain at every level, over the nodes inside: one row per resource
    room = [
        np.stack([np.bincount(tree.index[k][inside], weights=f[inside], minlength=len(ids)) for f in free])
        for k, ids in enumerate(tree.ids)
    ]
    copies = _copies(job, pods, free)
    # pods of the job each domain could hold (by KAI's per-node division when the pods are alike), else
    # how many nodes it has: the sums alone decide
    count = [
        np.bincount(
            tree.index[k][inside], weights=None if copies is None else copies[inside], minlength=len(ids)
        )
        for k, ids in enumerate(tree.ids)
    ]
    least = 1 if copies is None else len(pods)
    want = np.array(
        [
            sum(job.pods[i].gpu for i in pods if job.pods[i].kind != pl.CPU_ONLY),
            sum(job.pods[i].cpu for i in pods),
            sum(job.pods[i].memory for i in pods),
        ],
        dtype=np.float64,
    )

    def fits(free_room: np.ndarray) -> bool:
        return free_room[0] + EPS >= want[0] and free_room[1] >= want[1]

    out: list[tuple[int, np.ndarray | None]] = []
    for level in levels_to_try(job):
        if level != ROOT:
            held = count[level]
            fitting = [d for d in range(len(tree.ids[level])) if held[d] >= least and fits(room[level][:, d])]
            keys = sorted(_tree_key(tree, room, want, level, d) for d in fitting)
            out.extend((level, inside & (tree.index[level] == key[-1][2])) for key in keys)
        elif not topo.levels:
            out.append((ROOT, None))
        elif (
            inside.any()
            and fits(np.array([f[inside].sum() for f in free]))
            and (copies is None or copies[inside].sum() >= least)
        ):
            out.append((ROOT, inside))
    return out


def _copies(job: Job, pods: list[int], free: tuple[np.ndarray, ...]) -> np.ndarray | None:
    """KAI's capacity test when all pods to place are alike (§5.5): how many of them each node could hold,
    the least over requested resources of its free room divided by one pod's request, rounded down. None
    when they differ or share devices (fractions, GPU memory): then only the domain's sums are tested."""
    first = job.pods[pods[0]]
    if first.kind not in (pl.WHOLE, pl.CPU_ONLY):
        return None
    shape = (first.gpu, first.gpu_memory, first.cpu, first.memory, first.kind)
    if any((p.gpu, p.gpu_memory, p.cpu, p.memory, p.kind) != shape for p in (job.pods[i] for i in pods)):
        return None
    per = (first.gpu if first.kind == pl.WHOLE else 0.0, first.cpu, first.memory)
    held = np.full(free[0].shape[0], float(len(pods)))
    for amount, room in zip(per, free, strict=True):
        if amount > 0:
            held = np.minimum(held, np.floor((room + EPS) / amount))
    return np.maximum(held, 0.0)


NOT_IN_DOMAIN_RATIO = 1000.0
"""KAI's ratio for a requested resource the domain has none of free."""


def _tree_key(tree: _Levels, room: list[np.ndarray], want: np.ndarray, level: int, d: int) -> tuple:
    """Parent first: (-ratio, id) of each ancestor from the widest level down, then the domain's own; the
    ratio is KAI's bin-packing one, the job's request over the domain's free room in its dominant
    resource, so the domain the job fills most comes first, ties by id."""
    chain = []
    for k in range(level, -1, -1):
        free = room[k][:, d]
        ratios = [w / f if f > 0 else NOT_IN_DOMAIN_RATIO for w, f in zip(want, free, strict=True) if w > 0]
        chain.append((-max(ratios, default=0.0), tree.ids[k][d], d))
        d = int(tree.parent[k][d])
    return tuple(reversed(chain))


def _free(s: Session) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Whole free GPUs, free CPU and free memory per node slot."""
    ints, dev = s.nodes.ints, s.nodes.dev
    free_gpu = (dev[pl.D_USED] <= EPS).sum(axis=1) - np.maximum(0, dev.shape[2] - ints[:, pl.N_GPUS])
    free_cpu = ints[:, pl.N_CPU_CAP] - ints[:, pl.N_CPU_USED]
    free_mem = ints[:, pl.N_MEM_CAP] - ints[:, pl.N_MEM_USED]
    return free_gpu, free_cpu, free_mem


def running_domains(s: Session, job: Job, level: int) -> set[str]:
    """Ids of the domains at ``level`` (an index into ``constrained_labels``) that hold the job's active
    pods, this session's placements and evictions counted (§5.5: running pods pin the required domain, so
    a job that grows or refills its gang stays where it runs)."""
    labels = constrained_labels(job)[: level + 1]
    evicted = s.evicted.get(job.name, ())
    slots = [slot for i, slot in enumerate(job.node) if job.state[i] in ACTIVE and i not in evicted]
    slots += [slot for slot, *_ in s.placed.get(job.name, {}).values()]
    table = s.state.node_table
    out: set[str] = set()
    for slot in slots:
        name = table.name_of(slot) if slot >= 0 else None
        node = table.nodes.get(name) if name is not None else None
        values = [node.spec.labels.get(label) for label in labels] if node is not None else [None]
        if all(v is not None for v in values):
            out.add(".".join(values))  # type: ignore[arg-type]
    return out
