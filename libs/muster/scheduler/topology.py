"""Where a topology-constrained job may go (kai-semantics.md §5.5, §14.5, §18): the one home of the rule.

A constraint (``Topology``: the job's, or a sub-group's own) names a required and/or a preferred level.
With a KAI Topology behind it (``levels``, widest first) a domain at level i is one value of each level
label down to i (its id: the values joined with "."); nodes missing any of the topology's labels are in
no domain. Without one, the level is a node label on its own and its values are the domains.

Candidates, tried in order until the constrained pods all fit inside one: the domains of every level
from the preferred level (the required one if none) up to the required level, deepest level first; with
no required level, at last the whole topology (without a Topology: every node). Within a level the
domains follow the tree parent first, and at each parent the child the pods fill most first (KAI's
bin-packing ratio: the request over the free room in its dominant resource), ties by id. A domain is a
candidate only if its free GPUs and CPU cover the pods' sum. At the required level a group whose pods
already run is kept to the domains they run in (and the domains below them).

Nested constraints (§14.5) go top-down: each candidate of the job's constraint is a node set in which the
root's children are placed in sub-group order, a sub-group with its own constraint choosing its domain
*inside* its parent's node set and recursing, one without passing the set through; a leaf places its
pods. When a member fails, everything since that candidate began is rolled back and the next is tried.

A constraint with a preferred level also scores nodes (``preferred_scores``): its preferred-level
domains, ranked as candidates are, give their nodes floor(10·i/n) × 100 000, the roomiest the most, so
when the pods land in a domain wider than that level they fill its roomiest preferred-level domain first.
The scores are computed for each constrained node of the tree as its candidates are, and handed down:
a pod is placed by those of its leaf or, failing them, of its nearest ancestor with a preferred level
(``Statement.place`` then places it pod by pod, best score first). A constraint without a preferred
level computes none, and the plain placement path is untouched.

Allocate places by ``place_in_topology``; the victim solver (reclaim, preempt, consolidate) places the
pending job and every moved victim through it too, so a scenario counts only if each lands inside one
domain of each of its constraints.
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import numpy as np

from muster.events import Topology
from muster.kernels import placement as pl
from muster.tolerances import EPS

from .session import Session
from .state import ACTIVE, Job
from .subgroup_tree import ROOT as TREE_ROOT
from .subgroup_tree import ordered, scores

ROOT = -1
"""The level index of the whole topology (every node that carries its labels)."""


def levels_to_try(topo: Topology) -> list[int]:
    """Indices into ``constrained_labels(topo)`` of the levels tried, deepest first; ``ROOT`` last when
    no level is required."""
    labels = constrained_labels(topo)
    required = labels.index(topo.required) if topo.required else ROOT
    if not topo.levels:
        # a bare label: only that level, then anywhere when it is only preferred
        return [0] if topo.required else [0, ROOT]
    start = labels.index(topo.preferred) if topo.preferred else required
    if required == ROOT:
        return [*range(start, -1, -1), ROOT]
    return list(range(start, required - 1, -1))


def constrained_labels(topo: Topology) -> tuple[str, ...]:
    """The level labels of a constraint, widest first: its topology's, or its one bare label."""
    if topo.levels:
        return topo.levels
    return (topo.required or topo.preferred or "",)


def nested(job: Job) -> bool:
    """Whether some sub-group of the job has a constraint of its own (§14.5)."""
    return bool(job.subgroups) and job.tree.constrained[TREE_ROOT]


def constrained(job: Job) -> bool:
    """Whether the job, or one of its sub-groups, has a topology constraint."""
    return job.topology is not None or nested(job)


def constraints_key(s: Session, job: Job) -> tuple:
    """What of the job decides where its constraints let it go, for caches of failed shapes: the
    constraints and, once it runs, the job itself (its running pods pin the required domains, so it
    shares a failure with no other job)."""
    key = (job.topology, job.subgroups) if nested(job) else (job.topology,)
    if constrained(job) and s.active(job):
        return (*key, job.name)
    return key


def place_in_topology(
    s: Session,
    job: Job,
    pods: list[int],
    attempt: Callable[[list[int], np.ndarray | None, np.ndarray | None], int],
    checkpoint: Callable[[], object],
    rollback: Callable[[object], None],
    *,
    explain: bool = True,
) -> str | None:
    """Place ``pods`` inside one domain of each constraint that binds them (the job's, and with §14.5 its
    sub-groups'). ``attempt(some, mask, ranks)`` places the pods ``some`` on the nodes of ``mask`` (None:
    any node), each on the best of ``ranks`` it fits (the preferred-level node scores that bind them, see
    ``preferred_scores``; None: no order), and returns how many it placed, leaving nothing applied unless
    all were; ``checkpoint`` and ``rollback`` undo what the attempts since a checkpoint applied. None once
    every pod is placed, else why not (only "" unless ``explain``); nothing is left applied then."""
    walk = _Walk(s, job, attempt, checkpoint, rollback)
    start = checkpoint()
    if walk.place(TREE_ROOT, pods, None):
        return None
    rollback(start)
    if not explain:
        return ""
    failures = walk.failures
    if not failures:
        return s.no_fit(job, pods, 0)
    if len(failures) > 1 and job.topology is not None:
        # the job's own failure, and what failed inside the last of its domains tried
        return f"{failures[-1]}; in the last one tried, {failures[-2]}"
    return failures[-1]


@dataclass
class _Walk:
    """One top-down placement of a job's pods through its tree of constraints (§14.5)."""

    s: Session
    job: Job
    attempt: Callable[[list[int], np.ndarray | None, np.ndarray | None], int]
    checkpoint: Callable[[], object]
    rollback: Callable[[object], None]
    failures: list[str] = field(default_factory=list)
    """Why each constrained node that found no domain found none, innermost first."""

    def place(
        self, node: int, pods: list[int], within: np.ndarray | None, ranks: np.ndarray | None = None
    ) -> bool:
        """Place ``pods`` (all of the tree node's subtree) inside ``within``: in each candidate domain of
        the node's own constraint in turn, its members in sub-group order. ``ranks``: the preferred-level
        node scores of the nearest ancestor with a preferred level, which the node's own replace."""
        s, job = self.s, self.job
        tree = job.tree if job.subgroups else None
        topo = job.topology if tree is None or node == TREE_ROOT else tree.constraint[node]
        if topo is None:
            masks: list[tuple[int, np.ndarray | None]] = [(ROOT, within)]
        else:
            members = None if tree is None or node == TREE_ROOT else _subtree_pods(job, tree.leaves[node])
            if topo.preferred:
                ranks = preferred_scores(s, job, pods, topo, within)
            masks = candidate_masks(s, job, pods, topo, within, members)
        whole = tree is None or not tree.constrained[node]
        anywhere: int | None = None
        for level, mask in masks:
            if whole:
                count = self.attempt(pods, mask, ranks)
                if count == len(pods):
                    return True
                if level == ROOT:
                    anywhere = count
                continue
            cp = self.checkpoint()
            if self._members(node, pods, mask, ranks):
                return True
            self.rollback(cp)
        if anywhere is not None:
            self.failures.append(s.no_fit(job, pods, anywhere))
        elif topo is not None:
            whose = "the job" if tree is None or node == TREE_ROOT else f"sub-group {tree.names[node]!r}"
            self.failures.append(_no_domain(topo, len(pods), whose))
        return False

    def _members(self, node: int, pods: list[int], mask: np.ndarray | None, ranks: np.ndarray | None) -> bool:
        """The node's children with pods to place, in sub-group order (§14.4), each inside ``mask``; at
        the root then the pods that name no leaf."""
        job = self.job
        tree = job.tree
        score, sat = scores(tree, self.s.leaf_counts(job))
        rest = list(pods)
        for child in ordered(tree, node, score, sat):
            mine = [i for i in rest if tree.leaf_of.get(job.pods[i].subgroup) in tree.leaves[child]]
            if not mine:
                continue
            rest = [i for i in rest if i not in mine]
            if not self.place(child, mine, mask, ranks):
                return False
        return not rest or self.attempt(rest, mask, ranks) == len(rest)


def _subtree_pods(job: Job, leaves: frozenset[int]) -> set[int]:
    leaf_of = job.tree.leaf_of
    return {i for i, p in enumerate(job.pods) if leaf_of.get(p.subgroup) in leaves}


def _no_domain(topo: Topology, n: int, whose: str) -> str:
    level = topo.required or topo.preferred or ""
    if n > 1:
        return f"no {level} domain has room for all {n} pods of {whose}"
    if whose == "the job":
        return f"no node with a {level} label has room for the pod"
    return f"no node with a {level} label has room for the pod of {whose}"


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


def candidate_masks(
    s: Session,
    job: Job,
    pods: list[int],
    topo: Topology | None = None,
    within: np.ndarray | None = None,
    members: set[int] | None = None,
) -> list[tuple[int, np.ndarray | None]]:
    """(level, node mask) of each candidate domain of ``topo`` (default: the job's constraint) for
    ``pods``, in the order they are tried (see the module's docstring), only over the nodes of ``within``
    (None: every node; the mask of ``ROOT`` without a Topology is then None too). ``members``: the pods
    of the constrained group whose running ones pin its required domain (None: the whole job)."""
    topo = topo or job.topology
    assert topo is not None
    labels = constrained_labels(topo)
    required = labels.index(topo.required) if topo.required else ROOT
    tree = _levels(s, labels)
    inside = tree.index[-1] >= 0
    if within is not None:
        inside &= within[: inside.shape[0]]
    if required != ROOT:
        pinned = running_domains(s, job, required, topo, members)
        if pinned:
            ids = tree.ids[required]
            keep = np.array([dom in pinned for dom in ids] + [False], dtype=np.bool_)
            inside &= keep[tree.index[required]]
    free = _free(s)  # per node: whole GPUs, CPU, memory (idle or releasing)
    # free room of every domain at every level, over the nodes inside: one row per resource
    room = _room(tree, free, inside)
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
    want = _request(job, pods)

    def fits(free_room: np.ndarray) -> bool:
        return free_room[0] + EPS >= want[0] and free_room[1] >= want[1]

    out: list[tuple[int, np.ndarray | None]] = []
    for level in levels_to_try(topo):
        if level != ROOT:
            held = count[level]
            fitting = [d for d in range(len(tree.ids[level])) if held[d] >= least and fits(room[level][:, d])]
            keys = sorted(_tree_key(tree, room, want, level, d) for d in fitting)
            out.extend((level, inside & (tree.index[level] == key[-1][2])) for key in keys)
        elif not topo.levels:
            out.append((ROOT, within))
        elif (
            inside.any()
            and fits(np.array([f[inside].sum() for f in free]))
            and (copies is None or copies[inside].sum() >= least)
        ):
            out.append((ROOT, inside))
    return out


PREFERRED_LEVEL_SCORE = 100_000
"""KAI's node score per step of a preferred-level domain's rank (§5.3, v0.17's ×10)."""


def preferred_scores(
    s: Session, job: Job, pods: list[int], topo: Topology, within: np.ndarray | None = None
) -> np.ndarray | None:
    """KAI's preferred-level node scores for ``pods`` under ``topo`` (§5.5), per node slot: the n
    preferred-level domains below the lowest domain that holds every node of ``within`` (never below the
    preferred level) are sorted as candidates are (parent first, the one the pods fill most first), and
    the i-th (1-based) gives its nodes floor(10·i/n) × ``PREFERRED_LEVEL_SCORE``, so the domain with
    the most room relative to the pods is filled first. None when they would not order any two nodes
    (one such domain, or no preferred level)."""
    if not topo.preferred:
        return None
    labels = constrained_labels(topo)
    level = labels.index(topo.preferred)
    tree = _levels(s, labels)
    labelled = tree.index[-1] >= 0
    valid = labelled if within is None else labelled & within[: labelled.shape[0]]
    if not valid.any():
        return None
    under = np.ones(len(tree.ids[level]), dtype=np.bool_)
    up = np.arange(len(tree.ids[level]))  # each preferred domain's ancestor at the level looked at
    for k in range(level, -1, -1):
        if k < level:
            up = tree.parent[k + 1][up]
        held = np.unique(tree.index[k][valid])
        if held.shape[0] == 1:
            under = up == held[0]  # the lowest common domain, the deepest level all valid nodes share
            break
    n = int(under.sum())
    if n <= 1:
        return None
    room = _room(tree, _free(s), labelled)  # KAI sorts by each domain's whole room, not only within's
    want = _request(job, pods)
    keys = sorted(_tree_key(tree, room, want, level, d) for d in np.flatnonzero(under).tolist())
    by_domain = np.zeros(len(tree.ids[level]) + 1)  # the last: nodes outside every domain
    for i, key in enumerate(keys):
        by_domain[key[-1][2]] = math.floor((i + 1) / n * 10) * PREFERRED_LEVEL_SCORE
    return by_domain[tree.index[level]]


def _room(tree: _Levels, free: tuple[np.ndarray, ...], nodes: np.ndarray) -> list[np.ndarray]:
    """Per level, the free room of each domain over the node slots of ``nodes``: one row per resource."""
    return [
        np.stack([np.bincount(tree.index[k][nodes], weights=f[nodes], minlength=len(ids)) for f in free])
        for k, ids in enumerate(tree.ids)
    ]


def _request(job: Job, pods: list[int]) -> np.ndarray:
    """The pods' summed request: GPUs (of GPU pods), CPU, memory."""
    return np.array(
        [
            sum(job.pods[i].gpu for i in pods if job.pods[i].kind != pl.CPU_ONLY),
            sum(job.pods[i].cpu for i in pods),
            sum(job.pods[i].memory for i in pods),
        ],
        dtype=np.float64,
    )


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


def running_domains(
    s: Session, job: Job, level: int, topo: Topology | None = None, members: set[int] | None = None
) -> set[str]:
    """Ids of the domains at ``level`` (an index into ``constrained_labels(topo)``, default the job's)
    that hold active pods of ``members`` (None: the whole job), this session's placements and evictions
    counted (§5.5: running pods pin the required domain, so a job or a sub-group that grows or refills its
    gang stays where it runs)."""
    topo = topo or job.topology
    assert topo is not None
    labels = constrained_labels(topo)[: level + 1]
    evicted = s.evicted.get(job.name, ())
    slots = [
        slot
        for i, slot in enumerate(job.node)
        if job.state[i] in ACTIVE and i not in evicted and (members is None or i in members)
    ]
    slots += [slot for i, (slot, *_) in s.placed.get(job.name, {}).items() if members is None or i in members]
    table = s.state.node_table
    out: set[str] = set()
    for slot in slots:
        name = table.name_of(slot) if slot >= 0 else None
        node = table.nodes.get(name) if name is not None else None
        values = [node.spec.labels.get(label) for label in labels] if node is not None else [None]
        if all(v is not None for v in values):
            out.add(".".join(values))  # type: ignore[arg-type]
    return out


def domains_required(job: Job, pods: list[int]) -> bool:
    """Whether ``domains_could_hold`` has anything to check for ``pods``: the job, or a sub-group set,
    has a required level."""
    return any(True for _ in _required_sets(job, pods))


def domains_could_hold(s: Session, job: Job, pods: list[int], free: np.ndarray) -> bool:
    """KAI's per-domain GPU test of a victim prefix (§20, ``TopologyAwareIdleGpus``): with ``free`` GPUs per
    node slot, whether the GPUs that ``pods`` ask under each required constraint (the job's, and its
    sub-group sets') can be matched to domains of that level, largest need first, each to the first
    domain (most free first) with room left. A leaf's own constraint is not counted, as in KAI; a set
    inside another with the same required level is counted in that one (KAI would count its GPUs twice),
    and only the pods still to place count (KAI also counts the job's running pods, whose GPUs no domain
    shows free): so the test only ever skips what a simulation would refuse."""
    needs: dict[tuple[tuple[str, ...], int], list[float]] = {}
    for key, members in _required_sets(job, pods):
        gpus = s.request_of(job, members)[0]
        if gpus > EPS:
            needs.setdefault(key, []).append(gpus)
    for (labels, level), wanted in needs.items():
        index = _levels(s, labels).index[level]
        inside = index >= 0
        room = np.bincount(index[inside], weights=free[inside])
        if not _greedy_match(sorted(wanted, reverse=True), sorted(room.tolist(), reverse=True)):
            return False
    return True


def _required_sets(job: Job, pods: list[int]) -> Iterator[tuple[tuple[tuple[str, ...], int], list[int]]]:
    """Each required constraint on the job or a sub-group set, as (level labels, required level index),
    with those of ``pods`` it binds; one inside another of the same level is left out."""
    outer: frozenset = frozenset()
    if job.topology is not None and job.topology.required:
        outer = frozenset({_required_key(job.topology)})
        yield _required_key(job.topology), pods
    if not job.subgroups:
        return
    tree = job.tree
    stack = [(child, outer) for child in tree.children[TREE_ROOT]]
    while stack:
        node, above = stack.pop()
        if not tree.children[node]:
            continue
        topo = tree.constraint[node]
        if topo is not None and topo.required and _required_key(topo) not in above:
            key = _required_key(topo)
            above = above | {key}
            members = [i for i in pods if tree.leaf_of.get(job.pods[i].subgroup) in tree.leaves[node]]
            if members:
                yield key, members
        stack.extend((child, above) for child in tree.children[node])


def _required_key(topo: Topology) -> tuple[tuple[str, ...], int]:
    labels = constrained_labels(topo)
    return labels, labels.index(topo.required)  # type: ignore[arg-type]


def _greedy_match(needs: list[float], rooms: list[float]) -> bool:
    """Whether each need (largest first) finds a domain (rooms, largest first) still holding it."""
    used = [0.0] * len(rooms)
    for need in needs:
        for d, room in enumerate(rooms):
            if room + EPS < need:
                return False
            if room - used[d] + EPS >= need:
                used[d] += need
                break
        else:
            return False
    return True
