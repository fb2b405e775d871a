"""Whether a job's sub-group tree is well formed (kai-semantics.md §14.1, §14.7): the one check the
scenario loader, the podgrouper and admission all run.

A tree is a list of ``SubGroup`` entries, each naming its ``parent`` (None: the job itself). A
sub-group some other one names as parent is a *set* and needs ``min_subgroup`` of its direct children
(default: all); any other is a *leaf* and needs ``min_available`` pods. Pods belong to leaves only. A
sub-group's own topology constraint (§14.5) must be one ``muster.topologies.constraint`` could have made.

Where KAI's admission webhook only warns (``minSubGroup`` above the number of children: the node can
never be satisfied, so the job would wait for ever) this check refuses, naming the field.

A pod entry naming a set or an unknown sub-group is refused here too. KAI admits such a pod and then
leaves it unscheduled with a condition (§14.7); refusing at submission says the same thing earlier,
where the user can still fix the spelling, instead of a job that quietly runs without some of its
pods. A pod entry naming no sub-group belongs to the job directly (scenario-format.md v1.1); the
allocator grows it like a surplus pod once the tree is satisfied.
"""

from __future__ import annotations

from collections.abc import Sequence

from muster.events import SubGroup
from muster.field_paths import join
from muster.topologies import shape_error


class SubGroupError(ValueError):
    """A malformed sub-group tree; ``field`` names the offending field (``subgroups[2].parent``)."""

    def __init__(self, field: str, message: str) -> None:
        self.field = field
        self.message = message
        super().__init__(f"{field}: {message}")


def check_tree(
    subgroups: Sequence[SubGroup],
    min_subgroup: int | None,
    pod_subgroups: Sequence[str],
    path: str = "",
) -> None:
    """Raise ``SubGroupError`` for the first fault of the tree, its field path under ``path``.

    ``pod_subgroups`` is each pod entry's ``subgroup`` in order ('' for none)."""
    where = join(path, "subgroups") if path else "subgroups"
    index: dict[str, int] = {}
    children: dict[str, int] = {}
    for k, sub in enumerate(subgroups):
        at = f"{where}[{k}]"
        if not sub.name:
            raise SubGroupError(join(at, "name"), "a sub-group needs a name")
        if sub.name in index:
            raise SubGroupError(
                join(at, "name"), f"{sub.name!r} is already the name of {where}[{index[sub.name]}]"
            )
        index[sub.name] = k
        if sub.min_available < 0:
            raise SubGroupError(join(at, "min_available"), f"must be 0 or more, got {sub.min_available}")
        if sub.min_subgroup is not None and sub.min_subgroup < 0:
            raise SubGroupError(join(at, "min_subgroup"), f"must be 0 or more, got {sub.min_subgroup}")
        bad = shape_error(sub.topology) if sub.topology is not None else None
        if bad is not None:
            raise SubGroupError(join(join(at, "topology"), bad[0]), bad[1])
    for k, sub in enumerate(subgroups):
        if sub.parent is None:
            continue
        at = join(f"{where}[{k}]", "parent")
        if sub.parent not in index:
            raise SubGroupError(at, f"names no sub-group of this job: {sub.parent!r}")
        if index[sub.parent] >= k:
            if _in_cycle(subgroups, index, k):
                raise SubGroupError(at, f"{sub.name!r} is its own ancestor (a parent cycle)")
            raise SubGroupError(at, f"{sub.parent!r} must be listed before its children")
        children[sub.parent] = children.get(sub.parent, 0) + 1
    top = sum(1 for sub in subgroups if sub.parent is None)
    for k, sub in enumerate(subgroups):
        at = f"{where}[{k}]"
        n = children.get(sub.name, 0)
        if n == 0 and sub.min_subgroup is not None:
            raise SubGroupError(join(at, "min_subgroup"), "only a parent sub-group has min_subgroup")
        if n and sub.min_available:
            raise SubGroupError(
                join(at, "min_available"), "a parent sub-group counts its children (min_subgroup), not pods"
            )
        if n and sub.min_subgroup is not None and sub.min_subgroup > n:
            raise SubGroupError(join(at, "min_subgroup"), f"{sub.min_subgroup} is more than its {n} children")
    root = join(path, "min_subgroup") if path else "min_subgroup"
    if min_subgroup is not None:
        if min_subgroup < 0:
            raise SubGroupError(root, f"must be 0 or more, got {min_subgroup}")
        if not subgroups:
            raise SubGroupError(root, "needs subgroups to count")
        if min_subgroup > top:
            raise SubGroupError(root, f"{min_subgroup} is more than the {top} top-level sub-groups")
    pods = join(path, "pods") if path else "pods"
    for j, name in enumerate(pod_subgroups):
        if not name:
            continue
        at = join(f"{pods}[{j}]", "subgroup")
        if name not in index:
            raise SubGroupError(at, f"names no sub-group of this job: {name!r}")
        if name in children:
            raise SubGroupError(at, f"{name!r} is a parent sub-group; pods belong to leaves only")


def _in_cycle(subgroups: Sequence[SubGroup], index: dict[str, int], start: int) -> bool:
    seen = {start}
    k = start
    while (parent := subgroups[k].parent) is not None and parent in index:
        k = index[parent]
        if k in seen:
            return True
        seen.add(k)
    return False
