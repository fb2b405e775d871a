"""Where a topology-constrained job may go (kai-semantics.md §5.5, §18): the one home of the rule.

A job's constraint (``Job.topology``) names a required and/or a preferred level. With a KAI Topology
behind it (``levels``, widest first) a domain at level i is one value of each level label down to i
(its id: the values joined with "."); nodes missing any of the topology's labels are in no domain.
Without one, the level is a node label on its own and its values are the domains.

Candidates, tried in order until the job's pods all fit inside one: the domains of every level from the
preferred level (the required one if none) up to the required level, deepest level first; with no
required level, at last the whole topology (without a Topology: every node). Within a level the domains
follow the tree parent first, and at each parent the child with the least free room that still holds
the job first (bin-packing), ties by id. A domain is a candidate only if its free GPUs and CPU cover the
pods' sum. At the required level a job whose pods already run is kept to the domains they run in (and
the domains below them).

Allocate places by ``place_in_domain``; the victim solver (reclaim, preempt, consolidate) places the
pending job through it too, so a scenario counts only if the job lands inside one domain.
"""

from __future__ import annotations

from collections.abc import Callable

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
    out = list(range(start, required - 1 if required != ROOT else -1, -1))
    return out + [ROOT] if required == ROOT else out


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


def candidate_masks(s: Session, job: Job, pods: list[int]) -> list[tuple[int, np.ndarray | None]]:
    """(level, node mask) of each candidate domain, in the order they are tried (see the module's
    docstring); the mask of ``ROOT`` without a Topology is None: every node."""
    labels = constrained_labels(job)
    topo = job.topology
    assert topo is not None
    required = labels.index(topo.required) if topo.required else ROOT
    pinned = running_domains(s, job, required) if required != ROOT else None
    n = s.nodes.ints.shape[0]
    # each labelled node's domain id at every level, widest first
    paths: list[tuple[int, list[str]]] = []
    for node in s.state.node_table.nodes.values():
        values = [node.spec.labels.get(label) for label in labels]
        if any(v is None for v in values):
            continue
        ids = [".".join(values[: k + 1]) for k in range(len(labels))]  # type: ignore[arg-type]
        if pinned and ids[required] not in pinned:
            continue
        paths.append((node.slot, ids))
    free_gpu, free_cpu = _free(s)
    room: dict[str, tuple[float, float]] = {}
    masks: dict[str, np.ndarray] = {}
    for slot, ids in paths:
        for dom in ids:
            fg, fc = room.get(dom, (0.0, 0.0))
            room[dom] = (fg + float(free_gpu[slot]), fc + float(free_cpu[slot]))
            mask = masks.get(dom)
            if mask is None:
                mask = masks[dom] = np.zeros(n, dtype=np.bool_)
            mask[slot] = True
    gpu_req = sum(job.pods[i].gpu for i in pods if job.pods[i].kind != pl.CPU_ONLY)
    cpu_req = sum(job.pods[i].cpu for i in pods)

    def fits(free: tuple[float, float]) -> bool:
        return free[0] + EPS >= gpu_req and free[1] >= cpu_req

    out: list[tuple[int, np.ndarray | None]] = []
    for level in levels_to_try(job):
        if level != ROOT:
            # parent first: a domain sorts by its ancestors' (room, id), then its own
            chains = {tuple(ids[: level + 1]) for _, ids in paths}
            keys = sorted(
                tuple((room[dom], dom) for dom in chain) for chain in chains if fits(room[chain[-1]])
            )
            out.extend((level, masks[key[-1][1]]) for key in keys)
        elif not topo.levels:
            out.append((ROOT, None))
        elif paths:
            mask = np.zeros(n, dtype=np.bool_)
            mask[[slot for slot, _ in paths]] = True
            total = (float(free_gpu[mask].sum()), float(free_cpu[mask].sum()))
            if fits(total):
                out.append((ROOT, mask))
    return out


def _free(s: Session) -> tuple[np.ndarray, np.ndarray]:
    """Whole free GPUs and free CPU per node slot."""
    ints, dev = s.nodes.ints, s.nodes.dev
    free_gpu = (dev[pl.D_USED] <= EPS).sum(axis=1) - np.maximum(0, dev.shape[2] - ints[:, pl.N_GPUS])
    free_cpu = ints[:, pl.N_CPU_CAP] - ints[:, pl.N_CPU_USED]
    return free_gpu, free_cpu


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
