"""The victim solver shared by reclaim, preempt and consolidate (§6.3, KAI's by-pod solver).

The pending job's pods are solved one at a time. For each, victims are
added one unit at a time in victim order; a scenario evicts every
accumulated unit that holds a pod on a node of the newest unit, then tries
to place the pod (on idle or releasing resources). The first scenario that
fits is kept and the next pod continues with the victims not yet evicted.
Afterwards every killed victim that can be placed again is moved instead
(consolidation demands that of every victim in each scenario). Nothing
leaves the statement until the caller validates and commits.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from ..session import Session
from ..state import BINDING, BOUND, Job
from ..statement import Eviction, Statement
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
    stmt = Statement(s)
    sol = Solution(stmt)
    waiting: list[Unit] = []
    why = Eviction(action, job.name, "")
    for p in pods:
        cp = stmt.checkpoint()
        if stmt.place(job, [p]).count == 1:
            continue
        stmt.rollback(cp)
        fitted = False
        for unit in units:
            waiting.append(unit)
            nodes = {unit.job.node[i] for i in unit.pods}
            batch = [u for u in waiting if any(u.job.node[i] in nodes for i in u.pods)]
            cp = stmt.checkpoint()
            for u in batch:
                for i in u.pods:
                    stmt.evict(u.job, i, why)
            if stmt.place(job, [p]).count == 1 and (not all_must_move or _move_all(s, stmt, batch, sol)):
                for u in batch:
                    waiting.remove(u)
                    sol.evicted.append(u)
                fitted = True
                break
            stmt.rollback(cp)
        if not fitted:
            stmt.discard()
            return None
    if not all_must_move:
        _move_what_fits(s, stmt, sol)
    return sol


def _victim_jobs(units: list[Unit]) -> list[tuple[Job, list[int]]]:
    jobs: dict[str, tuple[Job, list[int]]] = {}
    for u in units:
        jobs.setdefault(u.job.name, (u.job, []))[1].extend(u.pods)
    return list(jobs.values())


def _move_all(s: Session, stmt: Statement, batch: list[Unit], sol: Solution) -> bool:
    moved = []
    for vjob, vpods in _victim_jobs(batch):
        if stmt.place(vjob, sorted(vpods)).count != len(vpods):
            return False
        moved.append(vjob.name)
    sol.moved.update(moved)
    return True


def _move_what_fits(s: Session, stmt: Statement, sol: Solution) -> None:
    for vjob, vpods in _victim_jobs(sol.evicted):
        if vjob.topology is not None and vjob.topology.required:
            continue  # a gang bound to one domain is not re-placed piecemeal
        cp = stmt.checkpoint()
        if stmt.place(vjob, sorted(vpods)).count == len(vpods):
            sol.moved.add(vjob.name)
        else:
            stmt.rollback(cp)


def commit(s: Session, job: Job, sol: Solution, reason_of: Callable[[Unit], str]) -> None:
    """Evictions (each with its reason), then binds: the job's pods, pipelined as KAI does, and moved
    victims, always pipelined behind their own eviction."""
    placements = sol.stmt.placements()
    mine = [p for p in placements if p[0] is job]
    bound = sum(1 for st in job.state if st in (BINDING, BOUND))
    bound += sum(1 for v in s.placed.get(job.name, {}).values() if not v[3])
    bound += sum(1 for p in mine if not p[5])
    pipeline_all = any(p[5] for p in mine) and bound < job.min_available
    out = []
    for p in placements:
        if p[0] is job:
            out.append((*p[:5], p[5] or pipeline_all))
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
