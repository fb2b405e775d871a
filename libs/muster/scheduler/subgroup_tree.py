"""Gang satisfaction on a job's sub-group tree (kai-semantics.md §14.2–§14.4, §14.6, §10): the one home of
the rule that every action, the stale check and the victim units ask.

Node 0 is the job itself (the root); the others are its sub-groups in the order listed (parents
before children). A leaf is satisfied when its active pods reach its ``min_available``; a set (the
root included) when at least ``need`` of its direct children are satisfied, ``need`` being its
``min_subgroup`` or else all its children. Counts come in per node (only leaves' matter), so callers
choose what counts as active (the ledger's states, or a session's tentative ones).

Pods that name no leaf (no ``subgroup``, or one from a log that predates the tree check) belong to
the job directly and are no part of the tree: they neither satisfy nor block it.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

from muster.events import SubGroup, Topology

ROOT = 0


@dataclass(frozen=True, slots=True)
class Tree:
    """A sub-group tree compiled for counting."""

    names: tuple[str, ...]
    children: tuple[tuple[int, ...], ...]
    need: tuple[int, ...]
    """A leaf's min_available; a set's number of children that must be satisfied."""
    leaf_of: dict[str, int]
    """Leaf name -> node."""
    constraint: tuple[Topology | None, ...] = ()
    """Each node's own topology constraint (the root's is the job's, so None here)."""
    leaves: tuple[frozenset[int], ...] = ()
    """Each node's leaves: itself for a leaf, every leaf of its subtree for a set."""
    constrained: tuple[bool, ...] = ()
    """Whether some node of each node's subtree, itself included, has its own constraint."""


@functools.lru_cache(maxsize=1024)
def tree_of(subgroups: tuple[SubGroup, ...], min_subgroup: int | None) -> Tree:
    """The compiled tree of a job's sub-groups (assumed checked by ``muster.subgroups.check_tree``;
    an entry whose parent is unknown or listed later hangs from the root, so an old log still folds)."""
    names = ("",) + tuple(sg.name for sg in subgroups)
    node_of = {sg.name: k + 1 for k, sg in enumerate(subgroups)}
    kids: list[list[int]] = [[] for _ in names]
    for k, sg in enumerate(subgroups, start=1):
        parent = node_of.get(sg.parent, ROOT) if sg.parent is not None else ROOT
        kids[parent if parent < k else ROOT].append(k)
    need = [0] * len(names)
    need[ROOT] = len(kids[ROOT]) if min_subgroup is None else min_subgroup
    for k, sg in enumerate(subgroups, start=1):
        if kids[k]:
            need[k] = len(kids[k]) if sg.min_subgroup is None else sg.min_subgroup
        else:
            need[k] = max(0, sg.min_available)
    leaf_of = {names[k]: k for k in range(1, len(names)) if not kids[k]}
    constraint = (None,) + tuple(sg.topology for sg in subgroups)
    leaves: list[frozenset[int]] = [frozenset()] * len(names)
    constrained = [c is not None for c in constraint]
    for k in range(len(names) - 1, -1, -1):  # children come after their parents
        leaves[k] = frozenset().union(*(leaves[c] for c in kids[k])) if kids[k] else frozenset({k})
        constrained[k] = constrained[k] or any(constrained[c] for c in kids[k])
    if not kids[ROOT]:
        leaves[ROOT] = frozenset()
    return Tree(
        names,
        tuple(tuple(c) for c in kids),
        tuple(need),
        leaf_of,
        constraint,
        tuple(leaves),
        tuple(constrained),
    )


def scores(tree: Tree, counts: Sequence[int]) -> tuple[list[int], list[bool]]:
    """Per node: its count (a leaf's active pods, a set's satisfied children) and whether it is satisfied."""
    n = len(tree.names)
    score = [0] * n
    sat = [False] * n
    for k in range(n - 1, -1, -1):  # children come after their parents
        kids = tree.children[k]
        if k != ROOT and not kids:
            score[k] = counts[k]
        else:
            score[k] = sum(1 for c in kids if sat[c])
        sat[k] = score[k] >= tree.need[k]
    return score, sat


def satisfied(tree: Tree, counts: Sequence[int]) -> bool:
    """Whether the whole job (the root) is satisfied."""
    return scores(tree, counts)[1][ROOT]


def leaf_below_minimum(tree: Tree, counts: Sequence[int]) -> bool:
    """Whether some leaf has fewer active pods than its own minimum, whatever its parents need: KAI's
    stale-gang test (§10, KAI-literal: ``min_subgroup`` is not consulted)."""
    return any(counts[k] < tree.need[k] for k in tree.leaf_of.values())


def short_leaves(tree: Tree, counts: Sequence[int]) -> list[tuple[str, int, int]]:
    """(name, active, minimum) of every leaf below its own minimum, in the order listed."""
    return [
        (tree.names[k], counts[k], tree.need[k])
        for k in sorted(tree.leaf_of.values())
        if counts[k] < tree.need[k]
    ]


def leaf_elastic_state(tree: Tree, counts: Sequence[int]) -> int:
    """Job order's elastic state judged per leaf (§3.1, KAI-literal: ``min_subgroup`` is not consulted):
    0 if some leaf is below its minimum, 1 if every leaf is exactly at it, else 2."""
    leaves = tree.leaf_of.values()
    if any(counts[k] < tree.need[k] for k in leaves):
        return 0
    return 1 if all(counts[k] == tree.need[k] for k in leaves) else 2


def ordered(tree: Tree, node: int, score: Sequence[int], sat: Sequence[bool]) -> list[int]:
    """The node's children in sub-group order (§14.4): unsatisfied first, then satisfied ones with a
    threshold before those without, the least filled first, then by name."""

    def key(c: int) -> tuple:
        if not sat[c]:
            return (0, 0, 0, tree.names[c])
        if tree.need[c] == 0:
            return (1, 1, score[c], tree.names[c])
        return (1, 0, Fraction(score[c], tree.need[c]), tree.names[c])

    return sorted(tree.children[node], key=key)


def pods_to_place(tree: Tree, counts: Sequence[int], pending: dict[int, list[int]]) -> list[int]:
    """The pods to place in one attempt (§14.3): while the root is unsatisfied, the missing pods of the
    first ``need`` children in sub-group order (a chosen child with nothing pending adds nothing, and
    the walk does not move on: KAI-literal); once satisfied, one step of growth. ``pending`` maps a
    leaf to its pending pods in task order."""
    score, sat = scores(tree, counts)

    def walk(node: int) -> list[int]:
        kids = ordered(tree, node, score, sat)
        if not sat[node]:
            out: list[int] = []
            for c in kids[: tree.need[node]]:
                if not sat[c]:
                    out += walk(c) if tree.children[c] else pending.get(c, [])[: tree.need[c] - counts[c]]
            return out
        for c in kids:
            got = walk(c) if tree.children[c] else pending.get(c, [])[: max(1, tree.need[c] - counts[c])]
            if got:
                return got
        return []

    return sorted(walk(ROOT))


def eviction_unit(
    tree: Tree, counts: Sequence[int], evictable: dict[int, list[int]]
) -> tuple[list[int], bool]:
    """The next pods of a victim job that go together (§14.6), and whether the job survives them.

    ``evictable`` maps a leaf to the pods a victim may lose, newest first. A leaf above its minimum
    gives one pod, else a set above its need gives a whole child, walking children in reverse
    sub-group order; only when neither exists does the unit take every pod of the job."""
    score, sat = scores(tree, counts)

    def surplus(node: int) -> bool:
        for c in tree.children[node]:
            if tree.children[c]:
                if score[c] > tree.need[c] or surplus(c):
                    return True
            elif counts[c] > tree.need[c]:
                return True
        return False

    def below(node: int) -> list[int]:
        if not tree.children[node]:
            return list(evictable.get(node, []))
        return [p for c in tree.children[node] for p in below(c)]

    def elastic(node: int) -> list[int]:
        kids = ordered(tree, node, score, sat)[::-1]
        if surplus(node):
            for c in kids:
                if tree.children[c]:
                    got = elastic(c)
                elif counts[c] > tree.need[c]:
                    got = evictable.get(c, [])[:1]
                else:
                    got = []
                if got:
                    return got
        if score[node] > tree.need[node]:
            for c in kids:
                got = below(c)
                if got:
                    return got
        return []

    unit = elastic(ROOT)
    if unit:
        return unit, True
    return below(ROOT), False
