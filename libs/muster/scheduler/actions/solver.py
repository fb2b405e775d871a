"""The victim solver shared by reclaim, preempt and consolidate (§6.3, §20: KAI's job solver).

Probe sizes: the solver looks for the largest k whose first k pods-to-place
can be placed, k = 1, 2, 4, ... until a probe fails or k reaches n, then by
bisection between the last success and the first failure; each successful
probe records its victims and later probes start from them. Unless k
reached n, one last probe asks for all n pods. A probe places only the
first k pods (the job as if its running pods and those k were all it had);
whether the whole job then meets its gang is checked once, up front, for
all n pods (KAI accepts an eviction scenario only when every leaf reaches
its minimum).

Generators, in KAI's plugin order, each owning a whole probe progression:
NodeLocalGreedy grows the victim list one unit at a time in victim order
and proposes the recorded victims plus the accumulated units that hold a
pod on a node of the newest unit; MultiNodeGang groups the accumulated
units by victim job and proposes the batches on the first k, k+1, k+3,
k+7, ... nodes ranked by the GPUs they would have free (``_node_sets``).
Every probe first proposes the recorded victims alone. A proposal that
already failed for the job (same pods, recorded victims and victims) is not
simulated again; a prefix the cheap filters turn down (``prefix_filters``:
pending pods' node affinity, GPUs per required topology domain, GPUs in
all) proposes nothing, and a proposal that cannot free enough GPUs is
skipped. KAI bounds the search by wall-clock budgets (per action, job and
generator); a simulation has no wall clock, so here every budget is
unlimited (§12) and decisions replay identically.

A proposal evicts its victims, then *simulates* allocation of the job's
pods so far together with every evicted victim job, in queue/job order
(§3): a victim whose queue orders before the job's is placed again first
and may take back the room it freed, failing the proposal. Placements in a
simulation obey queue limits at every level, counted after the evictions
(so a job at its queue's limit fits once lower-priority pods of that queue
are evicted). A victim placed again is moved (pipelined, onto releasing
devices before idle ones as KAI charges a pipelined pod, so a spread gang
packs onto one node), the rest are killed; consolidation demands that
every victim moves. The evicting job's own pods keep allocate's choice,
idle devices first: those that fit there bind at once. A job with a topology
constraint, the evicting one or a moved victim, lands inside one domain of it
(``scheduler/topology.py``), as allocate places it. The first proposal that
places all the probe's pods and that the action's validator accepts is kept
(KAI runs it on every proposal of every probe: reclaim's strategies and
ordering, §6 steps 4-6, for the probe's own request; a rejected proposal
fails like one that does not fit, and the search goes on); nothing leaves the
statement until the caller commits.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

import numpy as np

from muster.kernels import placement as pl
from muster.tolerances import EPS

from .. import topology
from ..capacity import over_limit
from ..gang import pipeline_all
from ..ordering import JobQueue
from ..session import Session
from ..state import Job
from ..statement import Eviction, Statement
from ..subgroup_tree import leaf_below_minimum
from .common import job_order_key
from .prefix_filters import PrefixFilters
from .victims import Unit


@dataclass
class Solution:
    stmt: Statement
    evicted: list[Unit] = field(default_factory=list)
    moved: set[str] = field(default_factory=set)
    """Names of victim jobs whose evicted pods were all placed again."""

    def killed(self) -> list[Unit]:
        return [u for u in self.evicted if u.job.name not in self.moved]


class _Units:
    """The victim units in order, drawn from the action's lazy victim order once and then re-read: every
    probe of every generator walks them from the start."""

    def __init__(self, units: Iterator[Unit]) -> None:
        self._source = units
        self._seen: list[Unit] = []

    def __iter__(self) -> Iterator[Unit]:
        i = 0
        while True:
            if i == len(self._seen):
                nxt = next(self._source, None)
                if nxt is None:
                    return
                self._seen.append(nxt)
            yield self._seen[i]
            i += 1


Validator = Callable[[list[int], list[Unit]], bool]
"""An action's own rule for one proposal (KAI's scenario validator): given the pods the probe places and
the victims the proposal kills (moved ones do not count), whether the action accepts it. A rejected
proposal fails like one whose pods do not fit, and the search goes on."""


@dataclass
class _Search:
    """What one solve shares across its generators and probes; free GPUs are read before any proposal."""

    s: Session
    job: Job
    pods: list[int]
    units: _Units
    stmt: Statement
    why: Eviction
    all_must_move: bool
    free: float
    validate: Validator | None = None
    failed: set[tuple] = field(default_factory=set)
    """Fingerprints of proposals that failed (KAI's de-duplication)."""
    _free_by_node: np.ndarray | None = None

    def free_by_node(self) -> np.ndarray:
        """GPUs not held by running pods, per node slot (none outside the session's nodes), read once with
        no proposal applied: only MultiNodeGang asks, so a solve NodeLocalGreedy settles never pays."""
        if self._free_by_node is None:
            self.stmt.discard()
            ints, dev = self.s.nodes.ints, self.s.nodes.dev
            free = (ints[:, pl.N_GPUS] - dev[pl.D_USED].sum(axis=1)).astype(float)
            free[~self.s.in_scope] = 0.0
            self._free_by_node = free
        return self._free_by_node

    def filters(self, want: list[int], recorded: list[Unit]) -> PrefixFilters:
        """The cheap prefix filters of one probe, its prefix starting from the recorded victims."""
        return PrefixFilters(self.s, self.job, want, self.free, self.free_by_node, recorded)


Proposer = Callable[[_Search, list[int], list[Unit]], Iterable[list[Unit]]]
"""A generator: for the pods of a probe and its recorded victims, the new victims to try, best first."""


def solve(
    s: Session,
    job: Job,
    pods: list[int],
    units: Iterator[Unit],
    action: str,
    *,
    all_must_move: bool = False,
    validate: Validator | None = None,
) -> Solution | None:
    """Pods of ``job`` placed with the victims the first generator finds that ``validate`` (if given)
    accepts, or None; the statement is left applied."""
    if job.subgroups and not _every_leaf_reaches_minimum(s, job, pods):
        return None
    stmt = Statement(s)
    if not pods:
        return Solution(stmt)
    why = Eviction(action, job.name, "")
    search = _Search(s, job, pods, _Units(units), stmt, why, all_must_move, s.free_gpus(), validate)
    for propose in GENERATORS:
        sol = _probe_sizes(search, propose)
        if sol is not None:
            return sol
    stmt.discard()
    return None


def _probe_sizes(search: _Search, propose: Proposer) -> Solution | None:
    """One generator's progression: k = 1, 2, 4, ... then bisection, then all n pods; each success
    records its victims for the probes after it. The solution of the probe at n, its statement applied."""
    n = len(search.pods)
    recorded: list[Unit] = []
    moved: set[str] = set()

    def probe(k: int) -> bool:
        nonlocal recorded, moved
        found = _probe(search, propose, search.pods[:k], recorded)
        if found is not None:
            recorded, moved = found
        return found is not None

    lo, k = 0, 1
    while probe(k):
        if k == n:
            return Solution(search.stmt, recorded, moved)
        lo, k = k, min(2 * k, n)
    hi = k
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if probe(mid):
            lo = mid
        else:
            hi = mid
    if lo == 0 or not probe(n):
        return None
    return Solution(search.stmt, recorded, moved)


def _probe(
    search: _Search, propose: Proposer, want: list[int], recorded: list[Unit]
) -> tuple[list[Unit], set[str]] | None:
    """The first proposal under which ``want`` all fit and which the action's validator accepts: its
    victims (recorded first) and the victim jobs moved. Proposals that failed before for the same pods and
    recorded victims are skipped."""
    base = frozenset(_key(u) for u in recorded)
    for victims in propose(search, want, recorded):
        fingerprint = (len(want), base, frozenset(_key(u) for u in victims))
        if fingerprint in search.failed:
            continue
        evicted = recorded + victims
        moved = _simulate(search.s, search.stmt, search.job, want, evicted, search.why, search.all_must_move)
        if moved is not None and _accepted(search, want, evicted, moved):
            return evicted, moved
        search.failed.add(fingerprint)
    return None


def _accepted(search: _Search, want: list[int], evicted: list[Unit], moved: set[str]) -> bool:
    if search.validate is None:
        return True
    return search.validate(want, Solution(search.stmt, evicted, moved).killed())


def _key(u: Unit) -> tuple[str, tuple[int, ...]]:
    return (u.job.name, u.pods)


def _fresh_units(search: _Search, recorded: list[Unit]) -> Iterator[Unit]:
    """The victim units in order, less those whose pods the recorded victims already hold."""
    taken = {(u.job.name, i) for u in recorded for i in u.pods}
    for unit in search.units:
        if not any((unit.job.name, i) in taken for i in unit.pods):
            yield unit


def _passing_prefixes(
    search: _Search, want: list[int], recorded: list[Unit]
) -> Iterator[tuple[list[Unit], Unit | None]]:
    """What every generator walks: the recorded victims alone (newest None), then the victim units
    accumulated in victim order with the newest one, each prefix only if it passes the cheap filters.
    The prefix is one list, grown in place: a generator reads it before asking for the next."""
    filters = search.filters(want, recorded)
    prefix: list[Unit] = []
    if filters.passes():
        yield prefix, None
    for unit in _fresh_units(search, recorded):
        prefix.append(unit)
        filters.grow([unit])
        if filters.passes():
            yield prefix, unit


def _node_local_greedy(search: _Search, want: list[int], recorded: list[Unit]) -> Iterator[list[Unit]]:
    """KAI's NodeLocalGreedy: the recorded victims alone, then for each unit added in victim order the
    accumulated units that hold a pod on a node of the newest one (whole units, wherever their pods
    run); a prefix the cheap filters turn down proposes nothing."""
    for prefix, newest in _passing_prefixes(search, want, recorded):
        if newest is None:
            yield []
            continue
        nodes = {newest.job.node[i] for i in newest.pods}
        yield [u for u in prefix if any(u.job.node[i] in nodes for i in u.pods)]


def _multi_node_gang(search: _Search, want: list[int], recorded: list[Unit]) -> Iterator[list[Unit]]:
    """KAI's MultiNodeGang: the recorded victims alone, then for each accumulated prefix of units that
    passes the cheap filters, the node sets of ``_node_sets``."""
    for prefix, newest in _passing_prefixes(search, want, recorded):
        if newest is None:
            yield []
        else:
            yield from _node_sets(search, want, recorded, prefix)


def _node_sets(
    search: _Search, want: list[int], recorded: list[Unit], prefix: list[Unit]
) -> Iterator[list[Unit]]:
    """The prefix's units grouped into one batch per victim job; the nodes holding batch pods ranked by
    the GPUs they would have free once those batches and the recorded victims left (fewest first, ties
    by first appearance; a node that could not hold the smallest pending pod is left out). With k the
    fewest leading nodes whose GPUs cover what the pods need beyond what is free elsewhere (on nodes the
    pods may use), the batches with a pod on the first k, k+1, k+3, k+7, ... nodes."""
    s, job = search.s, search.job
    room = search.free_by_node().copy()
    for u in recorded:
        for i in u.pods:
            room[u.job.node[i]] += u.job.acct[i][0]
    # the victim jobs (batches) with a pod on each node, nodes in the order the prefix first reaches them
    on_node: dict[int, list[str]] = {}
    for u in prefix:
        for i in u.pods:
            slot = u.job.node[i]
            if u.job.name not in on_node.setdefault(slot, []):
                on_node[slot].append(u.job.name)
            room[slot] += u.job.acct[i][0]
    smallest = min(s.request_of(job, [i])[0] for i in want)
    ranked = sorted((n for n in on_node if room[n] + EPS >= smallest), key=lambda n: room[n])
    usable = np.zeros(len(room), dtype=bool)
    for spec_key in {job.pods[i].spec_key for i in want}:
        usable |= s.eligible(job, spec_key)
    elsewhere = sum(float(room[n]) for n in np.flatnonzero(usable) if n not in on_node)
    short = s.request_of(job, want)[0] - elsewhere
    k, covered = 0, 0.0
    while short > covered + EPS and k < len(ranked):
        covered += float(room[ranked[k]])
        k += 1
    if short > covered + EPS:
        return
    step = 1
    while k <= len(ranked):
        names = {b for n in ranked[:k] for b in on_node[n]}
        yield [u for u in prefix if u.job.name in names]
        if k == len(ranked):
            return
        k, step = min(k + step, len(ranked)), step * 2


GENERATORS: tuple[Proposer, ...] = (_node_local_greedy, _multi_node_gang)
"""KAI's default portfolio, in plugin order."""


def _every_leaf_reaches_minimum(s: Session, job: Job, pods: list[int]) -> bool:
    """Whether placing ``pods`` brings every leaf of the job's tree to its own minimum: KAI accepts an
    eviction scenario only then (§14.2, KAI-literal, whatever ``min_subgroup`` says), so a job with an
    optional branch still empty starts by allocate alone, never by evicting others."""
    tree = job.tree
    counts = s.leaf_counts(job)
    for i in pods:
        node = tree.leaf_of.get(job.pods[i].subgroup)
        if node is not None:
            counts[node] += 1
    return not leaf_below_minimum(tree, counts)


def _simulate(
    s: Session,
    stmt: Statement,
    job: Job,
    want: list[int],
    victims: list[Unit],
    why: Eviction,
    all_must_move: bool,
) -> set[str] | None:
    """One scenario from a clean statement: evict ``victims``, then place the job's ``want`` pods and each
    victim job's evicted pods in queue/job order. The names of the victim jobs moved, or None when the
    job's pods do not all fit (or, with ``all_must_move``, a victim does not). Leaves the statement
    applied either way; the caller discards a failed one."""
    stmt.discard()
    if victims and not _enough_gpus(s, job, want, victims):
        return None
    evicted: dict[str, tuple[Job, list[int]]] = {}
    for u in victims:
        for i in u.pods:
            stmt.evict(u.job, i, why)
        evicted.setdefault(u.job.name, (u.job, []))[1].extend(u.pods)
    to_place: dict[str, list[int]] = {job.name: want}
    to_place.update({name: sorted(p) for name, (_, p) in evicted.items()})
    leaf_jobs: dict[int, list[Job]] = {}
    for j in [job, *(vj for vj, _ in evicted.values())]:
        leaf_jobs.setdefault(s.table.index[j.queue], []).append(j)
    order = JobQueue(
        s.shares,
        s.table.parent,
        leaf_jobs,
        job_order_key(s),
        lambda j: s.request_of(j, to_place[j.name]),
    )
    charged: list[tuple[Job, tuple[float, float, float]]] = []
    moved: set[str] = set()
    placed_job = False
    try:
        while (nxt := order.pop()) is not None:
            if nxt is job:
                placed_job = _place_in_topology(s, stmt, job, want, charged)
                if not placed_job:
                    return None
            elif _place_in_topology(s, stmt, nxt, to_place[nxt.name], charged, releasing_first=True):
                moved.add(nxt.name)
            elif all_must_move:
                return None
            order.done(nxt, False)
    finally:
        # the charges only steer this simulation's order and limits; commit charges for real
        for j, acct in reversed(charged):
            s.charge(j, acct, -1)
    return moved if placed_job else None


def _enough_gpus(s: Session, job: Job, want: list[int], victims: list[Unit]) -> bool:
    # KAI's cheap scenario filter: idle and releasing devices must at least add up to the request
    need = s.request_of(job, want)[0]
    return need <= s.free_gpus() + sum(u.res[0] for u in victims) + EPS


def _place_in_topology(
    s: Session, stmt: Statement, job: Job, pods: list[int], charged: list, releasing_first: bool = False
) -> bool:
    """``_place_within_limits``, all inside one domain of each topology constraint of the job, its own and
    its sub-groups' (§5.5, §14.5, §8): the evicting job's pods, and a moved victim's, which must fit its
    own constraints again (its pods still running pin their required domains)."""
    if not topology.constrained(job):
        return _place_within_limits(s, stmt, job, pods, charged, releasing_first)

    def attempt(some: list[int], mask: np.ndarray | None, ranks: np.ndarray | None) -> int:
        placed = _place_within_limits(
            s, stmt, job, some, charged, releasing_first, restrict=mask, ranks=ranks
        )
        return len(some) if placed else 0

    def checkpoint() -> tuple[int, int]:
        return stmt.checkpoint(), len(charged)

    def rollback(cp: tuple[int, int]) -> None:
        stmt.rollback(cp[0])
        while len(charged) > cp[1]:
            j, acct = charged.pop()
            s.charge(j, acct, -1)

    return topology.place_in_topology(s, job, pods, attempt, checkpoint, rollback, explain=False) is None


def _place_within_limits(
    s: Session,
    stmt: Statement,
    job: Job,
    pods: list[int],
    charged: list,
    releasing_first: bool = False,
    restrict: np.ndarray | None = None,
    ranks: np.ndarray | None = None,
) -> bool:
    """Place all of ``pods`` or none (on the nodes of ``restrict`` if given, by the preferred-level node
    scores ``ranks`` if given), keeping every queue on the job's path within its limit as the simulation
    has charged it so far; on success the placement is charged too. ``releasing_first``: whole GPUs from
    releasing devices before idle ones (a moved victim, see the module's docstring)."""
    cp = stmt.checkpoint()
    if stmt.place(job, pods, restrict=restrict, releasing_first=releasing_first, ranks=ranks).count != len(
        pods
    ):
        stmt.rollback(cp)
        return False
    gpu = cpu = mem = 0.0
    for _, pod, slot, *_ in stmt.placements()[-len(pods) :]:
        a = s.placed_accounting(job, pod, slot)
        gpu, cpu, mem = gpu + a[0], cpu + a[1], mem + a[2]
    acct = (gpu, cpu, mem)
    table = s.table
    if over_limit(s, table.ancestors[table.index[job.queue]], acct, s.alloc)[0] >= 0:
        stmt.rollback(cp)
        return False
    s.charge(job, acct)
    charged.append((job, acct))
    return True


def commit(s: Session, job: Job, sol: Solution, reason_of: Callable[[Unit], str]) -> None:
    """Evictions (each with its reason), then binds: the job's pods, pipelined as KAI does, and moved
    victims, always pipelined behind their own eviction."""
    placements = sol.stmt.placements()
    whole_gang = pipeline_all(s, job, [p for p in placements if p[0] is job])
    out = []
    for p in placements:
        if p[0] is job:
            out.append((*p[:5], p[5] or whole_gang))
        else:
            out.append((*p[:5], True))
    reasons: dict[str, Eviction] = {}
    recorded = sol.stmt.evictions()
    action = recorded[0][2].action if recorded else ""
    for u in sol.evicted:
        if u.job.name not in reasons:
            text = f"moved to make room for {job.name}" if u.job.name in sol.moved else reason_of(u)
            reasons[u.job.name] = Eviction(action, job.name, text)
    sol.stmt.commit(placements=out, reasons=reasons)
    s.reasons.pop(job.name, None)
