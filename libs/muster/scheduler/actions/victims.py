"""Who gives way, and in what order (§3.3, §9): victim units across queues, min-runtime protection.

A victim job gives one pod at a time while it runs above min_available
(newest pod first), then all its remaining pods together. Inside a leaf
queue the lowest-priority job goes first, jobs above their minimum before
the others, the newest first. Across queues, the queue that would be served
*last* by queue order gives next, compared with what it would hold after
the victims already chosen; so the order is produced lazily and re-sorted
after every pick.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from dataclasses import dataclass

from ..config import AllocatorConfig
from ..queue_accounting import QueueTable
from ..session import Session
from ..state import ClusterState, Job
from ..subgroup_tree import eviction_unit


@dataclass(frozen=True, slots=True)
class Unit:
    """Pods of one victim job that are evicted together."""

    job: Job
    pods: tuple[int, ...]
    res: tuple[float, float, float]
    surplus: bool
    """The job survives without these pods (one above a minimum, or a whole child a set can spare)."""


def units_of(s: Session, job: Job, protected: bool) -> list[Unit]:
    """The job's victim units in order; a protected job gives only the units it survives."""
    pods = s.victim_pods(job)
    if job.subgroups:
        return _tree_units(s, job, pods, protected)
    active = s.active(job)
    out = []
    while pods and active > job.min_available:
        p = pods.pop(0)
        out.append(Unit(job, (p,), _res(job, [p]), True))
        active -= 1
    if pods and not protected:
        out.append(Unit(job, tuple(pods), _res(job, pods), False))
    return out


def _tree_units(s: Session, job: Job, pods: list[int], protected: bool) -> list[Unit]:
    """Units taken on the sub-group tree (§14.6): no unit takes a satisfied sub-group below its minimum
    unless it takes the whole job. Pods that belong to no leaf go first, one at a time."""
    tree = job.tree
    counts = s.leaf_counts(job)
    evictable: dict[int, list[int]] = {}
    out = []
    for p in pods:
        node = tree.leaf_of.get(job.pods[p].subgroup)
        if node is None:
            out.append(Unit(job, (p,), _res(job, [p]), True))
        else:
            evictable.setdefault(node, []).append(p)
    while any(evictable.values()):
        unit, survives = eviction_unit(tree, counts, evictable)
        if not unit or (protected and not survives):
            break
        taken = set(unit)
        for node, left in evictable.items():
            kept = [p for p in left if p not in taken]
            counts[node] -= len(left) - len(kept)
            evictable[node] = kept
        out.append(Unit(job, tuple(unit), _res(job, unit), survives))
    return out


def _res(job: Job, pods: list[int]) -> tuple[float, float, float]:
    gpu = cpu = mem = 0.0
    for p in pods:
        a = job.acct[p]
        gpu += a[0]
        cpu += a[1]
        mem += a[2]
    return (gpu, cpu, mem)


def victim_job_key(s: Session, job: Job) -> tuple:
    """Inside a leaf queue: lowest priority, above min_available, newest, then name (reversed)."""
    above = s.elastic(job) == 2
    return (job.priority, not above, -job.submitted_at, _reverse(job.name))


def _reverse(name: str) -> tuple[int, ...]:
    return tuple(-ord(c) for c in name) + (1,)


def min_runtime(
    state: ClusterState,
    table: QueueTable,
    job: Job,
    kind: str,
    config: AllocatorConfig,
    reclaimer: int | None = None,
) -> float:
    """Seconds the job is protected from ``kind`` (preempt | reclaim), KAI's §9: the job's own value, else
    the first value met walking up its queue path, else the config's default for ``kind``. Preempt, and
    reclaim resolved by ``queue``, walk from the job's leaf. Reclaim resolved at the lowest common
    ancestor (``lca``, KAI's default) with the reclaiming leaf queue ``reclaimer`` walks from the common
    ancestor's child on the job's side, so a value set below that child guards the job from its
    siblings' reclaims, not from its cousins'; with no common ancestor only the job's top-level queue
    counts."""
    if job.min_runtime is not None:
        return job.min_runtime
    leaf = table.index.get(job.queue)
    if leaf is None:
        return config.default_min_runtime(kind)
    path = table.ancestors[leaf]
    if kind == "reclaim" and reclaimer is not None and config.reclaim_min_runtime_resolution == "lca":
        path = path[_below_common_ancestor(table, leaf, reclaimer) :]
    for q in path:
        spec = state.queues.get(table.names[q])
        mr = spec.min_runtime if spec is not None else None
        value = getattr(mr, kind) if mr is not None else None
        if value is not None:
            return value
    return config.default_min_runtime(kind)


def min_runtime_in_force(state: ClusterState, config: AllocatorConfig) -> bool:
    """Whether any running job may be protected at all: some job or queue sets a min-runtime, or the
    config gives one by default (else protection, and waiting for it to end, never apply)."""
    return (
        state.min_runtime_used
        or config.default_preempt_min_runtime > 0
        or config.default_reclaim_min_runtime > 0
    )


def _below_common_ancestor(table: QueueTable, leaf: int, other: int) -> int:
    """Where, on ``leaf``'s path (leaf first), the child of its lowest common ancestor with ``other``
    sits; the top-level queue when the two share none."""
    theirs = set(table.ancestors[other])
    path = table.ancestors[leaf]
    for i, q in enumerate(path):
        if q in theirs:
            return max(i - 1, 0)
    return len(path) - 1


def protected(s: Session, job: Job, kind: str, reclaimer: int | None = None) -> bool:
    """Whether the job is still inside its min-runtime for ``kind`` at the session's clock (for reclaim,
    against the reclaiming leaf queue ``reclaimer``)."""
    if job.last_start is None or not min_runtime_in_force(s.state, s.config):
        return False
    mr = min_runtime(s.state, s.table, job, kind, s.config, reclaimer)
    return mr > 0 and s.clock < job.last_start + mr


def victim_order(s: Session, by_leaf: dict[int, list[tuple[Job, bool]]]) -> Iterator[Unit]:
    """Units of the candidate jobs (per leaf queue, each with its protection) in KAI's victim order."""
    shares = copy.copy(s.shares)
    shares.alloc = [row[:] for row in s.alloc]
    table = s.table
    queues: dict[int, list[Unit]] = {}
    for leaf in sorted(by_leaf):
        jobs = sorted(by_leaf[leaf], key=lambda jp: victim_job_key(s, jp[0]))
        # surplus pods of every job of one priority go before the core of any of them
        units: list[Unit] = []
        for prio in sorted({j.priority for j, _ in jobs}):
            group = [(j, p) for j, p in jobs if j.priority == prio]
            per_job = [units_of(s, j, p) for j, p in group]
            units += [u for us in per_job for u in us if u.surplus]
            units += [u for us in per_job for u in us if not u.surplus]
        if units:
            units.reverse()  # pop from the end
            queues[leaf] = units
    while queues:
        leaf = max(queues, key=lambda q: _path_key(shares, table.ancestors[q]))
        units = queues[leaf]
        unit = units.pop()
        if not units:
            del queues[leaf]
        for a in table.ancestors[leaf]:
            row = shares.alloc[a]
            for r in range(3):
                row[r] -= unit.res[r]
        yield unit


def _path_key(shares, chain: list[int]) -> tuple:
    # top-down: the level where two queues' paths split decides, as KAI's tree walk does
    return tuple((shares.sort_key(q, (0.0, 0.0, 0.0)), q) for q in reversed(chain))
