"""``muster.scheduler.subgroup_tree``: satisfaction level by level, the pods to place, victim units."""

from __future__ import annotations

from muster.events import SubGroup as SG
from muster.scheduler.subgroup_tree import (
    eviction_unit,
    leaf_below_minimum,
    leaf_elastic_state,
    pods_to_place,
    satisfied,
    scores,
    short_leaves,
    tree_of,
)

# Two sets of two leaves each (one pod needed per leaf); the job needs one of the sets.
TWO_SETS = tree_of(
    (
        SG(name="set-a"),
        SG(name="a-0", parent="set-a", min_available=1),
        SG(name="a-1", parent="set-a", min_available=1),
        SG(name="set-b"),
        SG(name="b-0", parent="set-b", min_available=1),
        SG(name="b-1", parent="set-b", min_available=1),
    ),
    1,
)
# A segmented PyTorch-like gang: master, and a worker set of two segments of two pods.
SEGMENTED = tree_of(
    (
        SG(name="master", min_available=1),
        SG(name="worker", min_subgroup=2),
        SG(name="worker-0", parent="worker", min_available=2),
        SG(name="worker-1", parent="worker", min_available=2),
    ),
    None,
)
# An elastic RayCluster-like job: a head and two worker groups, each needing one pod.
RAY = tree_of(
    (
        SG(name="headgroup", min_available=1),
        SG(name="group-a", min_available=1),
        SG(name="group-b", min_available=1),
    ),
    None,
)


def counts(tree, **active) -> list[int]:
    out = [0] * len(tree.names)
    for name, n in active.items():
        out[tree.names.index(name.replace("_", "-"))] = n
    return out


def node(tree, name: str) -> int:
    return tree.names.index(name)


def test_a_set_is_satisfied_when_all_its_children_are_by_default():
    assert satisfied(SEGMENTED, counts(SEGMENTED, master=1, worker_0=2, worker_1=2))
    assert not satisfied(SEGMENTED, counts(SEGMENTED, master=1, worker_0=2, worker_1=1))


def test_a_parent_with_no_pods_of_its_own_counts_its_satisfied_children():
    score, sat = scores(SEGMENTED, counts(SEGMENTED, master=1, worker_0=2, worker_1=2))
    assert (score[node(SEGMENTED, "worker")], sat[node(SEGMENTED, "worker")]) == (2, True)


def test_the_job_min_subgroup_needs_only_that_many_top_level_children():
    assert satisfied(TWO_SETS, counts(TWO_SETS, a_0=1, a_1=1))
    assert not satisfied(TWO_SETS, counts(TWO_SETS, a_0=1, b_0=1))


def test_min_subgroup_zero_is_always_satisfied():
    tree = tree_of((SG(name="a", min_available=3),), 0)
    assert satisfied(tree, counts(tree))


def test_a_complete_segmented_gang_has_no_leaf_below_its_minimum():
    assert not leaf_below_minimum(SEGMENTED, counts(SEGMENTED, master=1, worker_0=2, worker_1=2))


def test_a_segment_below_its_minimum_is_a_leaf_below_minimum():
    assert leaf_below_minimum(SEGMENTED, counts(SEGMENTED, master=1, worker_0=2, worker_1=1))


def test_the_stale_test_ignores_min_subgroup():
    # KAI-literal (§10): set-b is not needed by the job, but its empty leaves still count as below minimum
    assert leaf_below_minimum(TWO_SETS, counts(TWO_SETS, a_0=1, a_1=1))


def test_an_unsatisfied_root_places_the_missing_pods_of_every_child_it_needs():
    pending = {
        node(SEGMENTED, "master"): [0],
        node(SEGMENTED, "worker-0"): [1, 2],
        node(SEGMENTED, "worker-1"): [3, 4],
    }
    assert pods_to_place(SEGMENTED, counts(SEGMENTED), pending) == [0, 1, 2, 3, 4]


def test_a_min_subgroup_root_places_only_the_first_set_it_needs():
    pending = {node(TWO_SETS, n): [i] for i, n in enumerate(("a-0", "a-1", "b-0", "b-1"))}
    assert pods_to_place(TWO_SETS, counts(TWO_SETS), pending) == [0, 1]


def test_a_satisfied_root_grows_by_one_pod():
    tree = tree_of((SG(name="a", min_available=1), SG(name="b", min_available=1)), None)
    pending = {node(tree, "a"): [2, 3], node(tree, "b"): [4]}
    assert len(pods_to_place(tree, counts(tree, a=1, b=1), pending)) == 1


def test_a_satisfied_root_grows_the_least_filled_child_first():
    # §14.4: both satisfied, smaller count/threshold first: b holds 1 of 1, a holds 3 of 1
    tree = tree_of((SG(name="a", min_available=1), SG(name="b", min_available=1)), None)
    pending = {node(tree, "a"): [7], node(tree, "b"): [9]}
    assert pods_to_place(tree, counts(tree, a=3, b=1), pending) == [9]


def test_a_leaf_of_min_zero_grows_one_pod_at_a_time():
    tree = tree_of((SG(name="a", min_available=0),), None)
    assert pods_to_place(tree, counts(tree), {node(tree, "a"): [0, 1, 2]}) == [0]


def test_an_elastic_job_gives_one_surplus_pod_without_emptying_a_group():
    # head 1, group-a 2 (one above its minimum), group-b 1: only group-a can spare a pod
    evictable = {node(RAY, "headgroup"): [0], node(RAY, "group-a"): [2, 1], node(RAY, "group-b"): [3]}
    unit, survives = eviction_unit(RAY, counts(RAY, headgroup=1, group_a=2, group_b=1), evictable)
    assert (unit, survives) == ([2], True)


def test_a_job_at_every_minimum_gives_all_its_pods_at_once():
    evictable = {node(RAY, "headgroup"): [0], node(RAY, "group-a"): [1], node(RAY, "group-b"): [2]}
    unit, survives = eviction_unit(RAY, counts(RAY, headgroup=1, group_a=1, group_b=1), evictable)
    assert (sorted(unit), survives) == ([0, 1, 2], False)


def test_a_set_above_its_need_gives_a_whole_child():
    # both sets satisfied, the job needs one: a whole set goes, the job survives
    evictable = {node(TWO_SETS, n): [i] for i, n in enumerate(("a-0", "a-1", "b-0", "b-1"))}
    unit, survives = eviction_unit(TWO_SETS, counts(TWO_SETS, a_0=1, a_1=1, b_0=1, b_1=1), evictable)
    assert survives and len(unit) == 2
    assert unit in ([0, 1], [2, 3])


def test_job_order_judges_the_elastic_state_per_leaf():
    # §3.1: below if any leaf is below, at if every leaf is exactly at its minimum, else above
    assert leaf_elastic_state(RAY, counts(RAY, headgroup=1, group_a=3, group_b=0)) == 0
    assert leaf_elastic_state(RAY, counts(RAY, headgroup=1, group_a=1, group_b=1)) == 1
    assert leaf_elastic_state(RAY, counts(RAY, headgroup=1, group_a=2, group_b=1)) == 2


def test_the_short_leaves_are_named_with_their_counts():
    assert short_leaves(SEGMENTED, counts(SEGMENTED, master=1, worker_0=2, worker_1=1)) == [
        ("worker-1", 1, 2)
    ]
