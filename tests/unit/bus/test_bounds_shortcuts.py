"""The bounds' quick answers (asked of every group and every manifest) agree with the walks that name the field."""

from __future__ import annotations

import itertools

import pytest
from muster import bounds
from muster import events as ev
from muster.bounds import (
    INT32_MAX,
    INT32_MIN,
    MAX_CPU_MILLIS,
    MAX_EXTENDED,
    MAX_GPU_MEMORY,
    MAX_MEMORY,
    MAX_NESTING,
    MAX_NODE_GPUS,
    MAX_PODS_PER_GROUP,
    within_nesting,
)

# Each limit's edges: below, at, and past both ends, and (for devices) shares and fractions of whole ones.
EDGES = {
    "count": [-1, 0, 1, MAX_PODS_PER_GROUP, MAX_PODS_PER_GROUP + 1],
    "gpu": [-1.0, -0.5, 0.0, 0.5, 1.0, 1.5, 2.0, float(MAX_NODE_GPUS), MAX_NODE_GPUS + 1.0, float("nan")],
    "gpu_memory": [-1, 0, MAX_GPU_MEMORY, MAX_GPU_MEMORY + 1],
    "cpu": [-1, 0, MAX_CPU_MILLIS, MAX_CPU_MILLIS + 1],
    "memory": [-1, 0, MAX_MEMORY, MAX_MEMORY + 1],
    "extended": [None, -1, 0, MAX_EXTENDED, MAX_EXTENDED + 1],
    "priority": [INT32_MIN - 1, INT32_MIN, 0, INT32_MAX, INT32_MAX + 1],
    "min_available": [-1, 0, MAX_PODS_PER_GROUP, MAX_PODS_PER_GROUP + 1],
    "subgroup": [None, -1, 0, MAX_PODS_PER_GROUP + 1],
}


def group(field: str, value) -> ev.PodGroupCreated:
    """A one-pod group with ``field`` set to ``value`` and everything else well inside its limit."""
    resources = {"gpu": 1.0, "gpu_memory": 0, "cpu": 1000, "memory": 2**30}
    spec = {"count": 1}
    top = {"priority": 50, "min_available": 1, "subgroups": []}
    if field in resources:
        resources[field] = value
    elif field == "extended":
        resources["extended"] = {} if value is None else {"rdma/ib": value}
    elif field == "count":
        spec["count"] = value
    elif field == "subgroup":
        top["subgroups"] = [] if value is None else [ev.SubGroup(name="s", min_available=value)]
    else:
        top[field] = value
    pods = [ev.PodSpec(resources=ev.Resources(**resources), **spec)]
    return ev.PodGroupCreated(name="j", queue="q", pods=pods, **top)


def walk_passes(g: ev.PodGroupCreated) -> bool:
    try:
        bounds._pod_group_walk(g)
    except bounds.OutOfBounds:
        return False
    return True


@pytest.mark.parametrize(("field", "value"), [(f, v) for f, vs in EDGES.items() for v in vs])
def test_a_group_fits_exactly_when_the_field_naming_walk_finds_nothing(field, value):
    g = group(field, value)
    assert bounds.pod_group_fits(g) == walk_passes(g)


def test_pods_past_the_limit_only_in_sum_do_not_fit():
    half = ev.PodSpec(count=MAX_PODS_PER_GROUP // 2 + 1)
    g = ev.PodGroupCreated(name="j", queue="q", pods=[half, half])
    assert not bounds.pod_group_fits(g)
    assert not walk_passes(g)


def test_a_group_that_does_not_fit_is_refused_naming_the_field():
    with pytest.raises(bounds.OutOfBounds, match=r"^\$\.pods\[0\]\.resources\.cpu: "):
        bounds.check_pod_group(group("cpu", MAX_CPU_MILLIS + 1))


def test_a_malformed_sub_group_tree_is_refused_at_admission_naming_the_field():
    g = ev.PodGroupCreated(
        name="j",
        queue="q",
        subgroups=[ev.SubGroup(name="a", parent="b", min_available=1), ev.SubGroup(name="b")],
        pods=[ev.PodSpec(subgroup="a")],
    )
    assert not bounds.pod_group_fits(g)
    with pytest.raises(bounds.OutOfBounds, match=r"^\$\.subgroups\[0\]\.parent: "):
        bounds.check_pod_group(g)


def nested(depth: int, leaves: int = 2) -> object:
    """Mappings and lists alternating ``depth`` levels deep, with scalars beside each level."""
    value: object = ["leaf"] * leaves
    for level in range(depth - 1):
        value = {"x": value, "n": level} if level % 2 else [value, "s", 1]
    return value


@pytest.mark.parametrize(
    ("depth", "levels"), list(itertools.product([1, 2, 3, MAX_NESTING, MAX_NESTING + 1], [1, 2, MAX_NESTING]))
)
def test_within_nesting_counts_the_value_itself_as_the_first_level(depth, levels):
    assert within_nesting(nested(depth), levels) == (depth <= levels)


def test_scalars_are_within_any_nesting():
    assert within_nesting("text", 0)
    assert within_nesting(3, 1)


def test_a_deep_branch_beside_shallow_ones_is_found():
    value = {"a": 1, "b": [1, 2], "c": {"d": nested(MAX_NESTING)}}
    assert not within_nesting(value, MAX_NESTING)
    assert within_nesting(value, MAX_NESTING + 2)


def admitted(event) -> bool:
    try:
        bounds.check([event])
    except bounds.OutOfBounds:
        return False
    return True


BIND_EDGES = {
    "pod": [-1, 0, MAX_PODS_PER_GROUP - 1, MAX_PODS_PER_GROUP],
    "gpus": [
        [],
        [0],
        [-1],
        [MAX_NODE_GPUS - 1],
        [MAX_NODE_GPUS],
        [3, MAX_NODE_GPUS],
        list(range(MAX_NODE_GPUS + 1)),
    ],
    "gpu_share": [-0.1, 0.0, 1.0, 1.1],
    "cycle": [-1, 0, INT32_MAX, INT32_MAX + 1],
    "epoch": [-1, 0, INT32_MAX + 1],
}


def within_placement_limits(pod: int, gpus: list[int], gpu_share: float) -> bool:
    return (
        0 <= pod < MAX_PODS_PER_GROUP
        and len(gpus) <= MAX_NODE_GPUS
        and all(0 <= g < MAX_NODE_GPUS for g in gpus)
        and 0 <= gpu_share <= 1
    )


@pytest.mark.parametrize(("field", "value"), [(f, v) for f, vs in BIND_EDGES.items() for v in vs])
def test_a_decision_and_its_confirmation_are_admitted_exactly_within_every_limit(field, value):
    placed = {"job": "j", "pod": 0, "node": "n", "gpus": [0], "gpu_share": 0.0, field: value}
    counters = {"cycle": placed.pop("cycle", 1), "epoch": placed.pop("epoch", 1)}
    placement = within_placement_limits(placed["pod"], placed["gpus"], placed["gpu_share"])
    in_int32 = all(0 <= v <= INT32_MAX for v in counters.values())
    assert admitted(ev.BindRequested(**placed, **counters)) == (placement and in_int32)
    assert admitted(ev.PodBound(**placed, at=1.0)) == placement


@pytest.mark.parametrize(
    ("topology", "field"),
    [
        (ev.Topology(name="t", levels=("zone", "rack"), required="host"), ".topology.required"),
        (
            ev.Topology(name="t", levels=("zone", "rack"), required="rack", preferred="zone"),
            ".topology.preferred",
        ),
        (ev.Topology(name="t", levels=("zone", "rack")), ".topology.name"),
        (ev.Topology(name="t", levels=tuple(f"l{k}" for k in range(17)), required="l0"), ".topology.levels"),
    ],
    ids=["level-outside", "preferred-wider", "no-level", "seventeen-levels"],
)
def test_a_topology_constraint_the_allocator_could_not_read_is_refused_at_admission(topology, field):
    g = ev.PodGroupCreated(name="j", queue="q", topology=topology)
    with pytest.raises(bounds.OutOfBounds) as info:
        bounds.check_pod_group(g, root="")
    assert info.value.path == field


def test_a_resolved_topology_constraint_passes_admission():
    topology = ev.Topology(name="t", levels=("zone", "rack"), required="zone", preferred="rack")
    bounds.check_pod_group(ev.PodGroupCreated(name="j", queue="q", topology=topology))
