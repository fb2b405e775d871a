"""KAI's reclaim action (§6): a queue below its fair share takes back resources other queues hold over theirs.

Victims come from other leaf queues, in victim order, minus jobs still in
their reclaim min-runtime. The solver accepts a proposal (each one it finds,
for the request of the pods its probe places, so a rejected one only sends
the search on to the next) only if every killed victim
group passes a reclaim strategy at the level where the two queue paths
split (fair-share reclaim: the victim side holds more than max(quota, fair
share); quota reclaim: the reclaimer side is within quota and the victim
side above it), and if queue ordering is preserved afterwards. A job with a
topology constraint reclaims too: the solver places it as allocate does, so
victims are evicted only when one domain of its required level then holds it.
"""

from __future__ import annotations

from muster.tolerances import EPS

from ..capacity import holds_over, over_limit, quota_reason, stays_within
from ..preemption_delay import held_back_by_delay
from ..reasons import RES_NAMES, amount
from ..session import Session
from ..state import Job
from . import solver
from .common import (
    Request,
    VictimSearch,
    held_back,
    shape_key,
    waiting,
)
from .victims import Unit, protected, victim_order


class ReclaimAction(VictimSearch):
    name = "reclaim"

    def passes_over(self, s: Session) -> bool:
        """No waiting job is held back by its delay, and each would take its queue past its fair share: only
        a queue that stays within its fair share reclaims. Nothing changes while every attempt stops there,
        so the shares read at the start hold for the whole walk."""
        w = waiting(s)
        for job, leaf, req in zip(w.jobs, w.leaves, w.requests, strict=True):
            if held_back(s, job):
                return False
            if stays_within_fair_share(s, leaf, req):
                return False
        return True

    def _attempt(
        self, s: Session, job: Job, pods: list[int], req: Request, running: dict, failed: set
    ) -> None:
        if held_back_by_delay(s, job):
            return
        leaf = s.table.index[job.queue]
        if not stays_within_fair_share(s, leaf, req):
            return
        if quota_reason(s, job, req):
            return
        key = shape_key(s, job, pods)
        if key in failed:
            return
        by_leaf = {
            q: [(j, protected(s, j, "reclaim", leaf)) for j in jobs]
            for q, jobs in running.items()
            if q != leaf and could_give(s, leaf, q, req) and any(s.victim_pods(j) for j in jobs)
        }
        if not by_leaf or not _limits_can_clear(s, leaf, req, by_leaf):
            failed.add(key)
            return
        before = [row[:] for row in s.alloc]

        def allowed(want: list[int], killed: list[Unit]) -> bool:
            return check(s, job, s.request_of(job, want), before, killed) is not None

        sol = solver.solve(s, job, pods, victim_order(s, by_leaf), self.name, validate=allowed)
        if sol is None:
            failed.add(key)
            return
        texts = check(s, job, req, before, sol.killed())
        assert texts is not None  # the search validated this very proposal for all the pods
        solver.commit(s, job, sol, lambda u: texts[u.job.name])


def stays_within_fair_share(s: Session, leaf: int, req: Request) -> bool:
    """Whether leaf queue ``leaf`` stays within its fair share with ``req`` more: only such a queue reclaims."""
    fair, alloc = s.shares.fair[leaf], s.alloc[leaf]
    return all(alloc[r] + req[r] <= fair[r] + EPS for r in range(3))


def _limits_can_clear(s: Session, leaf: int, req: Request, by_leaf: dict) -> bool:
    """Whether every limit the request would pass on the reclaimer's path sits above some candidate victim:
    only evictions below a queue lower its allocation (the solver checks the limits exactly)."""
    table = s.table
    for q in table.ancestors[leaf]:
        over = over_limit(s, (q,), req, s.alloc)[0] >= 0
        if over and not any(q in table.ancestors[v] for v in by_leaf):
            return False
    return True


def split(s: Session, mine: int, theirs: int) -> tuple[int, int]:
    """The reclaimer's and the victim's ancestors that are siblings, where the two queue paths split."""
    table = s.table
    a = list(reversed(table.ancestors[mine]))
    b = list(reversed(table.ancestors[theirs]))
    lvl = 0
    while lvl < len(a) - 1 and lvl < len(b) - 1 and a[lvl] == b[lvl]:
        lvl += 1
    return a[lvl], b[lvl]


def could_give(s: Session, leaf: int, victim_leaf: int, req: Request) -> bool:
    """A cheap test before any search: the victim side holds more than its fair share, or more than its
    quota while the reclaimer side is within its own."""
    rq, v = split(s, leaf, victim_leaf)
    table, shares, alloc = s.table, s.shares, s.alloc
    if any(holds_over(shares.allocatable[v][r], alloc[v][r]) for r in range(3)):
        return True
    if all(stays_within(table.quota[rq, r], alloc[rq][r], req[r]) for r in range(3)):
        return any(holds_over(table.quota[v, r], alloc[v][r]) for r in range(3))
    return False


def check(
    s: Session, job: Job, req: Request, before: list[list[float]], killed: list[Unit]
) -> dict[str, str] | None:
    """The rule that allows each killed victim (by job name), or None if the solution breaks the rules."""
    table, shares = s.table, s.shares
    names = table.names
    rem = [row[:] for row in before]
    leaf = table.index[job.queue]
    lost: set[int] = set()
    texts: dict[str, str] = {}
    for u in killed:
        vleaf = table.index[u.job.queue]
        rq, v = split(s, leaf, vleaf)
        text = None
        for r in range(3):
            cap = shares.allocatable[v][r]
            if holds_over(cap, rem[v][r]):
                text = (
                    f"fair-share reclaim for {job.name}: queue {names[v]} holds {amount(r, rem[v][r])} "
                    f"{RES_NAMES[r]}, over its fair share of {amount(r, cap)}"
                )
                break
        if text is None:
            within = all(stays_within(table.quota[rq, r], before[rq][r], req[r]) for r in range(3))
            for r in range(3):
                quota = table.quota[v, r]
                if within and holds_over(quota, rem[v][r]):
                    text = (
                        f"quota reclaim for {job.name}: queue {names[rq]} is within its quota and queue "
                        f"{names[v]} holds {amount(r, rem[v][r])} {RES_NAMES[r]}, over its quota of "
                        f"{amount(r, quota)}"
                    )
                    break
        if text is None:
            return None
        texts.setdefault(u.job.name, text)
        for a in table.ancestors[vleaf]:
            lost.add(a)
            row = rem[a]
            for r in range(3):
                row[r] -= u.res[r]
    if not _ordering_preserved(s, job, req, before, rem, lost, killed):
        return None
    return texts


def _ordering_preserved(
    s: Session,
    job: Job,
    req: Request,
    before: list[list[float]],
    rem: list[list[float]],
    lost: set[int],
    killed: list[Unit],
) -> bool:
    """The reclaimer (at each level) must end strictly less saturated than every sibling that lost."""
    table, fair = s.table, s.shares.fair
    mult = s.config.reclaimer_utilization_multiplier
    involved = [r for r in range(3) if req[r] > 0 or any(u.res[r] > 0 for u in killed)]
    top = [q for q in range(len(table.names)) if table.parent[q] < 0]
    for a in table.ancestors[table.index[job.queue]]:
        p = table.parent[a]
        siblings = table.children[p] if p >= 0 else top
        for sib in siblings:
            if sib == a or sib not in lost:
                continue
            for r in involved:
                mine = _ratio(rem[a][r] + req[r], fair[a][r])
                if mine <= 1.0 + EPS or fair[sib][r] <= 0:
                    continue
                if mine * mult >= rem[sib][r] / fair[sib][r] - EPS:
                    return False
    return True


def _ratio(allocated: float, fair: float) -> float:
    if fair > 0:
        return allocated / fair
    return float("inf") if allocated > EPS else 0.0
