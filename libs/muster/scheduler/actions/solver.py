"""The victim solver shared by reclaim, preempt and consolidate (§6.3, KAI's by-pod solver).

The pending job's pods-to-place are solved one more at a time. For each,
victims are added one unit at a time in victim order; a scenario evicts
every victim recorded so far plus the accumulated units that hold a pod on
a node of the newest unit, then *simulates* allocation of the job's pods
so far together with every evicted victim job, in queue/job order (§3):
a victim whose queue orders before the job's is placed again first and may
take back the room it freed, failing the scenario. Placements in a
simulation obey queue limits at every level, counted after the evictions
(so a job at its queue's limit fits once lower-priority pods of that queue
are evicted). A victim placed again is moved (pipelined, onto releasing
devices before idle ones as KAI charges a pipelined pod, so a spread gang
packs onto one node), the rest are killed; consolidation demands that
every victim moves. The evicting job's own pods keep allocate's choice,
idle devices first: those that fit there bind at once. A job with a topology
constraint, the evicting one or a moved victim, lands inside one domain of it
(``scheduler/topology.py``), as allocate places it. The first scenario
that places the job's pods is kept; nothing leaves the statement until the
caller validates and commits.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import numpy as np

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
from .victims import Unit


@dataclass
class Solution:
    stmt: Statement
    evicted: list[Unit] = field(default_factory=list)
    moved: set[str] = field(default_factory=set)
    """Names of victim jobs whose evicted pods were all placed again."""

    def killed(self) -> list[Unit]:
        return [u for u in self.evicted if u.job.name not in self.moved]


def solve(
    s: Session,
    job: Job,
    pods: list[int],
    units: Iterator[Unit],
    action: str,
    *,
    all_must_move: bool = False,
) -> Solution | None:
    """Pods of ``job`` placed with the fewest victims in order, or None; the statement is left applied."""
    if job.subgroups and not _every_leaf_reaches_minimum(s, job, pods):
        return None
    stmt = Statement(s)
    why = Eviction(action, job.name, "")
    recorded: list[Unit] = []
    waiting: list[Unit] = []
    moved: set[str] | None = None
    for k in range(len(pods)):
        want = pods[: k + 1]
        moved = _simulate(s, stmt, job, want, recorded, why, all_must_move)
        for unit in units if moved is None else ():
            waiting.append(unit)
            nodes = {unit.job.node[i] for i in unit.pods}
            batch = [u for u in waiting if any(u.job.node[i] in nodes for i in u.pods)]
            moved = _simulate(s, stmt, job, want, recorded + batch, why, all_must_move)
            if moved is not None:
                recorded += batch
                waiting = [u for u in waiting if u not in batch]
                break
        if moved is None:
            stmt.discard()
            return None
    return Solution(stmt, recorded, moved or set())


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

    def attempt(some: list[int], mask: np.ndarray | None) -> int:
        placed = _place_within_limits(s, stmt, job, some, charged, releasing_first, restrict=mask)
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
) -> bool:
    """Place all of ``pods`` or none (on the nodes of ``restrict`` if given), keeping every queue on the
    job's path within its limit as the simulation has charged it so far; on success the placement is
    charged too. ``releasing_first``: whole GPUs from releasing devices before idle ones (a moved victim,
    see the module's docstring)."""
    cp = stmt.checkpoint()
    if stmt.place(job, pods, restrict=restrict, releasing_first=releasing_first).count != len(pods):
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
