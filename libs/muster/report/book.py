"""Each queue's GPUs over time, kept as they change and integrated lazily, queue by queue.

A queue's figures (GPUs held, quota, fair share, borrowed, lent, starved: ``muster.report.shares``)
hold between two changes that touch it. The book adds each figure times the seconds it held when the
queue is next touched (or at the end), so a change costs what it touches — the queue, its ancestors
and their siblings — and not every queue: a long log stays a long log, not logs times queues.
"""

from __future__ import annotations

from dataclasses import dataclass

from muster.report.model import QueueSeries, Timeline
from muster.report.shares import QueueTree, SiblingGroup, moment
from muster.tolerances import EPS


@dataclass
class Integrals:
    """Per queue: GPU-seconds held, of fair share, of quota, borrowed, lent; seconds starved."""

    used: float = 0.0
    fair_share: float = 0.0
    quota: float = 0.0
    below_quota: float = 0.0
    borrowed: float = 0.0
    lent: float = 0.0


class ShareBook:
    """The queues' figures now, and their integrals since the book's clock started."""

    def __init__(self) -> None:
        self.tree = QueueTree.of([])
        self.capacity = 0.0
        self.own_used: dict[str, float] = {}
        self.own_waiting: dict[str, int] = {}
        self.fair: dict[str, float] = {}
        self.now: float | None = None
        """None until the clock starts: changes before then set figures but add up nothing."""
        self.used: dict[str, float] = {}
        self.waiting: dict[str, float] = {}
        self.quota: dict[str, float] = {}
        self.borrowed: dict[str, float] = {}
        self.lent: dict[str, float] = {}
        self.starved: set[str] = set()
        self.groups: dict[str | None, SiblingGroup] = {}
        """Per parent (None: the top level), its children's sums."""
        self.taken: dict[str | None, float] = {}
        """Per sibling group, the unused quota its borrowing sits on."""
        self.integrals: dict[str, Integrals] = {}
        self._since: dict[str, float] = {}
        self.total_used = 0.0
        self.used_seconds = 0.0
        self.available_seconds = 0.0
        self._cluster_since = 0.0
        self.timeline = Timeline()

    # -- the clock ------------------------------------------------------------------------------

    def move_to(self, t: float) -> None:
        """The clock reads ``t`` (never earlier than it did); the first call starts it."""
        if self.now is None:
            self.now = self._cluster_since = t
            self._since = dict.fromkeys(self.tree.order, t)
            self._record(self.tree.order)
        elif t > self.now:
            self.now = t

    def close(self) -> None:
        """Add up every figure to the clock's reading."""
        self._flush(self.tree.order)
        self._flush_cluster()

    def _flush(self, names) -> None:
        if self.now is None:
            return
        for q in names:
            dt = self.now - self._since.get(q, self.now)
            self._since[q] = self.now
            if dt <= 0:
                continue
            acc = self.integrals.setdefault(q, Integrals())
            acc.used += self.used[q] * dt
            acc.quota += self.quota[q] * dt
            acc.fair_share += self.fair.get(q, 0.0) * dt
            acc.borrowed += self.borrowed[q] * dt
            acc.lent += self.lent[q] * dt
            if q in self.starved:
                acc.below_quota += dt

    def _flush_cluster(self) -> None:
        if self.now is None:
            return
        dt = self.now - self._cluster_since
        self.used_seconds += self.total_used * dt
        self.available_seconds += self.capacity * dt
        self._cluster_since = self.now

    def _record(self, names) -> None:
        """Every series of ``names`` (and the cluster's) from now on."""
        if self.now is None:
            return
        self.timeline.capacity.set(self.now, self.capacity)
        self.timeline.used.set(self.now, self.total_used)
        for q in names:
            s = self.timeline.queues.setdefault(q, QueueSeries())
            s.used.set(self.now, self.used[q])
            s.quota.set(self.now, self.quota[q])
            s.fair_share.set(self.now, self.fair.get(q, 0.0))

    def _record_used(self, names) -> None:
        """The GPUs ``names`` (and the cluster) hold from now on: all a bind or a release changes."""
        if self.now is None:
            return
        self.timeline.used.set(self.now, self.total_used)
        for q in names:
            self.timeline.queues[q].used.set(self.now, self.used[q])

    # -- changes --------------------------------------------------------------------------------

    def set_queues(self, tree: QueueTree) -> None:
        """The queues are now ``tree``."""
        self._flush(self.tree.order)
        self.tree = tree
        for q in tree.order:
            self._since.setdefault(q, self.now if self.now is not None else 0.0)
        self._refresh()

    def set_capacity(self, capacity: float) -> None:
        """The cluster has ``capacity`` GPUs."""
        self._flush(self.tree.order)
        self._flush_cluster()
        self.capacity = capacity
        self._refresh()

    def _refresh(self) -> None:
        """Every figure again, from what each queue holds and waits for."""
        m = moment(self.tree, self.own_used, self.own_waiting, self.capacity)
        self.used, self.quota, self.borrowed, self.lent = m.used, m.quota, m.borrowed, m.lent
        self.starved = set(m.starved)
        self.groups = {}
        for g, siblings in self.tree.children.items():
            group = self.groups[g] = SiblingGroup()
            for q in siblings:
                group.add(self.used[q], self.quota[q])
            self.taken[g] = group.taken(self._room(g))
        self.waiting = {q: 0.0 for q in self.tree.order}
        for q, n in self.own_waiting.items():
            for up in self._chain(q):
                self.waiting[up] += n
        self._record(self.tree.order)

    def _chain(self, q: str) -> list[str]:
        """``q`` and its ancestors."""
        out = []
        while q is not None:
            out.append(q)
            q = self.tree.parent[q]
        return out

    def set_fair_share(self, q: str, gpus: float) -> None:
        self._flush((q,))
        self.fair[q] = gpus
        if self.now is not None:
            self.timeline.queues[q].fair_share.set(self.now, gpus)

    def add_waiting(self, q: str, pods: int) -> None:
        """``pods`` more pods of ``q``'s own jobs wait for a GPU."""
        chain = self._chain(q)
        self._flush(chain)
        self.own_waiting[q] = self.own_waiting.get(q, 0) + pods
        for up in chain:
            self.waiting[up] += pods
            self._starve(up)

    def _room(self, g: str | None) -> float:
        """What the children of ``g`` share: the cluster at the top level, what they hold below."""
        return self.capacity if g is None else self.groups[g].held

    def add_used(self, q: str, gpus: float) -> None:
        """``q``'s own jobs hold ``gpus`` more GPUs."""
        chain = self._chain(q)
        self._flush(chain)
        self._flush_cluster()
        self.own_used[q] = self.own_used.get(q, 0.0) + gpus
        self.total_used += gpus
        for up in chain:
            g, quota = self.tree.parent[up], self.quota[up]
            self.groups[g].add(self.used[up], quota, -1.0)
            self.used[up] += gpus
            self.groups[g].add(self.used[up], quota)
            over = self.used[up] - quota
            self.borrowed[up] = over if over > 0 else 0.0
            self._starve(up)
            self._lend(g)
        self._record_used(chain)

    def _lend(self, g: str | None) -> None:
        """The children of ``g`` lend again; only a queue whose share moves is added up to now (its
        other figures have not moved). Nothing moves while nothing is taken, before and after."""
        group = self.groups[g]
        taken = group.taken(self._room(g))
        if taken == 0.0 and self.taken[g] == 0.0:
            return
        self.taken[g] = taken
        for s in self.tree.children[g]:
            lent = group.lent(taken, self.used[s], self.quota[s])
            if lent != self.lent[s]:
                self._flush((s,))
                self.lent[s] = lent

    def _starve(self, q: str) -> None:
        if self.waiting[q] > 0 and self.used[q] < self.quota[q] - EPS:
            self.starved.add(q)
        else:
            self.starved.discard(q)
