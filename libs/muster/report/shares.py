"""What each queue holds, is owed, borrows and lends at one moment: pure functions over the queue tree.

A queue's figures are over its subtree (its own jobs and its descendants'). Its quota is its GPU quota
(missing: 0; unlimited, -1: everything its siblings share, as KAI reads it: the cluster's GPUs for a
top-level queue, its parent's quota below). Siblings share a room: the cluster's GPUs for the top-level
queues, what their parent holds for a parent's children.

Borrowed: what a queue uses above its quota. Lent: the part of its unused quota that others' borrowing
sits on. Borrowing is served first from the room that no sibling's quota covers, then from the unused
quotas, each lending in proportion to how much of its quota it leaves unused.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from muster.tolerances import EPS


@dataclass(frozen=True)
class QueueTree:
    """Queues in an order that puts every parent before its children."""

    order: tuple[str, ...]
    parent: Mapping[str, str | None]
    quota: Mapping[str, float]
    """The GPU quota each spec states (-1: unlimited)."""
    children: Mapping[str | None, tuple[str, ...]]
    """The children of each queue; under None, the top-level queues."""

    @staticmethod
    def of(queues: list[tuple[str, str | None, float]]) -> QueueTree:
        """The tree of ``(name, parent, gpu quota)`` rows, in the rows' order among siblings. A parent
        that is not a row makes its child top-level, as does a parent loop."""
        names = {name for name, _, _ in queues}
        parent = {name: (p if p in names and p != name else None) for name, p, _ in queues}
        parent = _without_loops(parent)
        children: dict[str | None, list[str]] = {}
        for name, _, _ in queues:
            children.setdefault(parent[name], []).append(name)
        order: list[str] = []
        stack = list(reversed(children.get(None, [])))
        while stack:
            name = stack.pop()
            order.append(name)
            stack.extend(reversed(children.get(name, [])))
        return QueueTree(
            order=tuple(order),
            parent=parent,
            quota={name: q for name, _, q in queues},
            children={k: tuple(v) for k, v in children.items()},
        )

    def depth(self, name: str) -> int:
        d, up = 0, self.parent[name]
        while up is not None:
            d, up = d + 1, self.parent[up]
        return d

    def is_leaf(self, name: str) -> bool:
        return not self.children.get(name)


def _without_loops(parent: dict[str, str | None]) -> dict[str, str | None]:
    """``parent`` with each queue whose ancestry loops back made top-level."""
    out = dict(parent)
    for name in parent:
        seen, up = {name}, out[name]
        while up is not None:
            if up in seen:
                out[name] = None
                break
            seen.add(up)
            up = out[up]
    return out


@dataclass(frozen=True)
class Moment:
    """Per queue (subtree) at one moment: GPUs held, its quota, borrowed, lent; who was starved."""

    used: dict[str, float]
    quota: dict[str, float]
    borrowed: dict[str, float]
    lent: dict[str, float]
    starved: frozenset[str]
    """Queues below their quota while one of their jobs waited for a GPU."""


def subtree_sums(tree: QueueTree, own: Mapping[str, float]) -> dict[str, float]:
    """Each queue's ``own`` amount plus its descendants'."""
    out = {name: own.get(name, 0.0) for name in tree.order}
    for name in reversed(tree.order):
        up = tree.parent[name]
        if up is not None:
            out[up] += out[name]
    return out


def effective_quotas(tree: QueueTree, capacity: float) -> dict[str, float]:
    """Each queue's GPU quota, an unlimited one (-1) read as its siblings' whole room."""
    out: dict[str, float] = {}
    for name in tree.order:
        q = tree.quota[name]
        up = tree.parent[name]
        out[name] = q if q >= 0 else (capacity if up is None else out[up])
    return out


@dataclass
class SiblingGroup:
    """What siblings sharing a room add up to: GPUs above their quotas, quota they leave unused, their
    quotas, the GPUs they hold. Kept as sums, so one sibling's change moves it at once."""

    borrowed: float = 0.0
    unused: float = 0.0
    covered: float = 0.0
    held: float = 0.0

    def add(self, used: float, quota: float, sign: float = 1.0) -> None:
        """Count a sibling holding ``used`` GPUs of its ``quota`` in (sign 1) or out (sign -1)."""
        over = used - quota
        self.borrowed += sign * (over if over > 0 else 0.0)
        self.unused += sign * (-over if over < 0 else 0.0)
        self.covered += sign * quota
        self.held += sign * used

    def taken(self, room: float) -> float:
        """The unused quota the borrowing sits on: what it borrows beyond the room no quota covers."""
        uncovered = room - self.covered
        beyond = self.borrowed - (uncovered if uncovered > 0 else 0.0)
        return min(self.unused, beyond) if beyond > EPS and self.unused > EPS else 0.0

    def lent(self, taken: float, used: float, quota: float) -> float:
        """A sibling's share of ``taken``: in proportion to the quota it leaves unused."""
        return taken * (quota - used) / self.unused if taken > 0 and used < quota else 0.0


def lent_by_siblings(
    siblings: tuple[str, ...], used: Mapping[str, float], quota: Mapping[str, float], room: float
) -> dict[str, float]:
    """How much of each sibling's unused quota the others' borrowing sits on, within ``room``."""
    group = SiblingGroup()
    for s in siblings:
        group.add(used[s], quota[s])
    taken = group.taken(room)
    return {s: group.lent(taken, used[s], quota[s]) for s in siblings}


def moment(
    tree: QueueTree, own_used: Mapping[str, float], own_waiting: Mapping[str, int], capacity: float
) -> Moment:
    """The queues' figures when each holds ``own_used`` GPUs and has ``own_waiting`` pods waiting for a
    GPU (its own jobs only), on a cluster of ``capacity`` GPUs."""
    used = subtree_sums(tree, own_used)
    waiting = subtree_sums(tree, {k: float(v) for k, v in own_waiting.items()})
    quota = effective_quotas(tree, capacity)
    lent: dict[str, float] = {}
    for up, siblings in tree.children.items():
        room = capacity if up is None else sum(used[s] for s in siblings)
        lent.update(lent_by_siblings(siblings, used, quota, room))
    return Moment(
        used=used,
        quota=quota,
        borrowed={q: max(0.0, used[q] - quota[q]) for q in tree.order},
        lent={q: lent.get(q, 0.0) for q in tree.order},
        starved=frozenset(q for q in tree.order if waiting[q] > 0 and used[q] < quota[q] - EPS),
    )
