"""``muster.subgroups.check_tree``: a malformed sub-group tree is refused, naming the field (§14.1, §14.7)."""

from __future__ import annotations

import pytest
from muster.events import SubGroup as SG
from muster.events import Topology
from muster.subgroups import SubGroupError, check_tree


def fault(subgroups, min_subgroup=None, pods=(), path="") -> tuple[str, str]:
    with pytest.raises(SubGroupError) as err:
        check_tree(subgroups, min_subgroup, list(pods), path)
    return err.value.field, err.value.message


def test_a_well_formed_tree_passes():
    check_tree(
        [
            SG(name="set", min_subgroup=1),
            SG(name="a", parent="set", min_available=1),
            SG(name="b", parent="set"),
        ],
        1,
        ["a", "b", ""],
    )


def test_an_unknown_parent_is_named():
    field, message = fault([SG(name="a", parent="nope", min_available=1)])
    assert field == "subgroups[0].parent" and "nope" in message


def test_a_parent_listed_after_its_child_is_refused():
    field, message = fault([SG(name="a", parent="set", min_available=1), SG(name="set")])
    assert field == "subgroups[0].parent" and "listed before" in message


def test_a_parent_cycle_is_named_a_cycle():
    field, message = fault([SG(name="a", parent="b"), SG(name="b", parent="a")])
    assert field == "subgroups[0].parent" and "cycle" in message


def test_a_sub_group_that_is_its_own_parent_is_a_cycle():
    assert "cycle" in fault([SG(name="a", parent="a")])[1]


def test_duplicate_names_are_refused():
    assert fault([SG(name="a"), SG(name="a")])[0] == "subgroups[1].name"


def test_min_subgroup_above_the_number_of_children_is_refused():
    field, _ = fault([SG(name="set", min_subgroup=3), SG(name="a", parent="set"), SG(name="b", parent="set")])
    assert field == "subgroups[0].min_subgroup"


def test_the_job_min_subgroup_above_its_top_level_sub_groups_is_refused():
    assert fault([SG(name="a"), SG(name="b")], min_subgroup=3, path="jobs[4]")[0] == "jobs[4].min_subgroup"


def test_a_job_min_subgroup_without_sub_groups_is_refused():
    assert fault([], min_subgroup=1)[0] == "min_subgroup"


def test_min_subgroup_on_a_leaf_is_refused():
    assert fault([SG(name="a", min_subgroup=1)])[0] == "subgroups[0].min_subgroup"


def test_min_available_on_a_parent_is_refused():
    assert (
        fault([SG(name="set", min_available=2), SG(name="a", parent="set")])[0]
        == "subgroups[0].min_available"
    )


@pytest.mark.parametrize(
    ("subgroups", "min_subgroup", "field"),
    [
        ([SG(name="a", min_available=-1)], None, "subgroups[0].min_available"),
        ([SG(name="s", min_subgroup=-1), SG(name="a", parent="s")], None, "subgroups[0].min_subgroup"),
        ([SG(name="a")], -1, "min_subgroup"),
    ],
)
def test_negative_minimums_are_refused(subgroups, min_subgroup, field):
    assert fault(subgroups, min_subgroup)[0] == field


def test_a_pod_naming_an_unknown_sub_group_is_refused():
    assert fault([SG(name="a")], pods=["", "b"])[0] == "pods[1].subgroup"


def test_a_pod_naming_a_parent_sub_group_is_refused():
    field, message = fault([SG(name="set"), SG(name="a", parent="set")], pods=["set"])
    assert field == "pods[0].subgroup" and "leaves only" in message


def test_a_sub_groups_constraint_no_topology_could_make_is_named_by_its_field():
    # what bus admission refuses of an event's own constraint, it refuses of a sub-group's too
    bad = Topology(name="dc", levels=("zone", "rack"), required="host")
    field, message = fault([SG(name="a", min_available=1, topology=bad)])
    assert field == "subgroups[0].topology.required" and "'host'" in message
