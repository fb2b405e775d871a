"""Scenario format v1.1 sub-group trees -> events: the tree carried over, its faults named by field."""

from __future__ import annotations

import pytest
from muster import events as ev
from muster.scenario import ScenarioError, job_to_podgroup

TREE_JOB = {
    "name": "j",
    "queue": "q",
    "min_subgroup": 1,
    "subgroups": [
        {"name": "set-a", "min_subgroup": 1},
        {"name": "a-0", "parent": "set-a", "min_available": 1},
        {"name": "b", "min_available": 2},
    ],
    "pods": [{"count": 1, "subgroup": "a-0"}, {"count": 2, "subgroup": "b"}, {"count": 1}],
}


def job(**changes):
    return {**TREE_JOB, **changes}


def error_path(data) -> str:
    with pytest.raises(ScenarioError) as info:
        job_to_podgroup(data, path="jobs[0]")
    return info.value.path


def test_the_tree_and_each_pod_entrys_leaf_reach_the_group():
    group = job_to_podgroup(TREE_JOB)
    assert group.min_subgroup == 1
    assert group.subgroups == [
        ev.SubGroup(name="set-a", min_subgroup=1),
        ev.SubGroup(name="a-0", parent="set-a", min_available=1),
        ev.SubGroup(name="b", min_available=2),
    ]
    assert [p.subgroup for p in group.pods] == ["a-0", "b", ""]


def test_a_sub_groups_own_topology_reaches_its_sub_group():
    subgroups = [{"name": "b", "min_available": 2, "topology": {"required": "rack"}}]
    group = job_to_podgroup(job(min_subgroup=None, subgroups=subgroups, pods=[{"subgroup": "b"}]))
    assert group.subgroups == [ev.SubGroup(name="b", min_available=2, topology=ev.Topology(required="rack"))]


def test_a_sub_groups_topology_without_a_level_is_refused_naming_it():
    subgroups = [{"name": "b", "min_available": 2, "topology": {}}]
    assert error_path(job(min_subgroup=None, subgroups=subgroups, pods=[{"subgroup": "b"}])) == (
        "jobs[0].subgroups[0].topology"
    )


def test_a_leaf_needs_min_available():
    subgroups = [{"name": "b"}]
    assert error_path(job(min_subgroup=None, subgroups=subgroups, pods=[{"subgroup": "b"}])) == (
        "jobs[0].subgroups[0].min_available"
    )


def test_min_available_and_min_subgroup_together_are_refused():
    subgroups = [
        {"name": "s", "min_available": 1, "min_subgroup": 1},
        {"name": "x", "parent": "s", "min_available": 1},
    ]
    assert (
        error_path(job(min_subgroup=None, subgroups=subgroups, pods=[{"subgroup": "x"}]))
        == "jobs[0].subgroups[0]"
    )


def test_a_pod_entry_naming_a_parent_is_refused_at_its_field():
    assert error_path(job(pods=[{"subgroup": "set-a"}])) == "jobs[0].pods[0].subgroup"


def test_an_unknown_parent_is_refused_at_its_field():
    subgroups = [{"name": "x", "parent": "nope", "min_available": 1}]
    assert error_path(job(min_subgroup=None, subgroups=subgroups, pods=[{"subgroup": "x"}])) == (
        "jobs[0].subgroups[0].parent"
    )


def test_min_available_zero_is_a_job_without_a_gang():
    group = job_to_podgroup({"name": "j", "queue": "q", "min_available": 0, "pods": [{"count": 3}]})
    assert group.min_available == 0


def test_min_available_above_the_pods_is_refused():
    assert error_path({"name": "j", "queue": "q", "min_available": 4, "pods": [{"count": 3}]}) == (
        "jobs[0].min_available"
    )
