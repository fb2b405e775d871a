"""Scenario v1.1: KAI Topology resources (``topologies``) and the job constraints that name one
(kai-semantics.md §18). A constraint is resolved to label keys with the topology's levels; what KAI
would leave unscheduled as a configuration error is refused, naming the field."""

from __future__ import annotations

import pytest
from muster import events as ev
from muster.scenario import ScenarioError, parse_scenario, scenario_events

DC = {
    "name": "dc",
    "levels": [{"nodeLabel": "zone"}, {"nodeLabel": "topology.rack", "alias": "rack"}],
}


def scenario(topology: dict, topologies: list | None = None) -> dict:
    return {
        "name": "s",
        "topologies": [DC] if topologies is None else topologies,
        "nodes": [{"name": "node-a", "resources": {"gpu": 1}}],
        "queues": [{"name": "team"}],
        "jobs": [{"name": "j", "queue": "team", "topology": topology, "pods": [{"resources": {"gpu": 1}}]}],
    }


def error_of(data: dict) -> ScenarioError:
    with pytest.raises(ScenarioError) as info:
        parse_scenario(data)
    return info.value


def constraint_of(data: dict) -> ev.Topology | None:
    (group,) = [e for e in scenario_events(parse_scenario(data)) if isinstance(e, ev.PodGroupCreated)]
    return group.topology


def test_an_alias_resolves_to_its_label_and_the_constraint_carries_the_levels():
    got = constraint_of(scenario({"name": "dc", "required": "zone", "preferred": "rack"}))
    assert got == ev.Topology(
        name="dc", levels=("zone", "topology.rack"), required="zone", preferred="topology.rack"
    )


def test_a_constraint_without_a_name_keeps_its_bare_label():
    assert constraint_of(scenario({"required": "rack"})) == ev.Topology(required="rack")


def test_an_unknown_topology_is_refused_naming_the_name():
    error = error_of(scenario({"name": "dcc", "required": "zone"}))
    assert error.path == "jobs[0].topology.name" and "'dcc'" in error.message and "dc" in error.message


def test_a_level_that_is_not_in_the_topology_is_refused_naming_the_field():
    error = error_of(scenario({"name": "dc", "required": "zone", "preferred": "host"}))
    assert error.path == "jobs[0].topology.preferred" and "'host'" in error.message


def with_subgroup_topology(topology: dict) -> dict:
    data = scenario({"name": "dc", "required": "zone"})
    data["jobs"][0]["subgroups"] = [{"name": "a", "min_available": 1, "topology": topology}]
    data["jobs"][0]["pods"][0]["subgroup"] = "a"
    return data


def test_a_sub_groups_constraint_resolves_against_the_topology_as_the_jobs_does():
    (group,) = [
        e
        for e in scenario_events(parse_scenario(with_subgroup_topology({"name": "dc", "required": "rack"})))
        if isinstance(e, ev.PodGroupCreated)
    ]
    assert group.subgroups[0].topology == ev.Topology(
        name="dc", levels=("zone", "topology.rack"), required="topology.rack"
    )


def test_a_sub_groups_level_that_is_not_in_the_topology_is_refused_naming_the_field():
    error = error_of(with_subgroup_topology({"name": "dc", "required": "host"}))
    assert error.path == "jobs[0].subgroups[0].topology.required" and "'host'" in error.message


def test_a_preferred_level_wider_than_the_required_one_is_refused():
    error = error_of(scenario({"name": "dc", "required": "rack", "preferred": "zone"}))
    assert error.path == "jobs[0].topology.preferred" and "wider" in error.message


def test_a_topology_named_without_a_level_is_refused():
    assert error_of(scenario({"name": "dc"})).path == "jobs[0].topology.name"


@pytest.mark.parametrize(
    ("levels", "field"),
    [
        ([], "topologies[0].levels"),
        ([{"nodeLabel": f"l{k}"} for k in range(17)], "topologies[0].levels"),
        ([{"nodeLabel": "zone"}, {"nodeLabel": "zone"}], "topologies[0].levels[1].nodeLabel"),
        (
            [{"nodeLabel": "kubernetes.io/hostname"}, {"nodeLabel": "rack"}],
            "topologies[0].levels[0].nodeLabel",
        ),
        ([{"nodeLabel": "zone"}, {"nodeLabel": "rack", "alias": "zone"}], "topologies[0].levels[1].alias"),
        (
            [{"nodeLabel": "zone", "alias": "z"}, {"nodeLabel": "rack", "alias": "z"}],
            "topologies[0].levels[1].alias",
        ),
    ],
    ids=[
        "no-levels",
        "seventeen-levels",
        "label-twice",
        "hostname-not-last",
        "alias-is-a-label",
        "alias-twice",
    ],
)
def test_a_malformed_topology_is_refused_naming_the_field(levels: list, field: str):
    error = error_of(scenario({"required": "zone"}, [{"name": "dc", "levels": levels}]))
    assert error.path == field


def test_two_topologies_of_one_name_are_refused():
    assert error_of(scenario({"required": "zone"}, [DC, DC])).path == "topologies[1].name"


def test_a_level_field_kai_does_not_have_is_refused():
    levels = [{"nodeLabel": "zone", "label": "x"}]
    assert error_of(scenario({"required": "zone"}, [{"name": "dc", "levels": levels}])).path.endswith("label")


def test_apply_submits_the_topologies_with_the_jobs_and_they_group_as_simulate_reads_them():
    from muster.cli.apply_cmd import plan, topology_manifests
    from muster.grouping.group import group_manifests

    parsed = parse_scenario(scenario({"name": "dc", "required": "rack"}))
    _, _, jobs = plan(parsed)
    (live,) = group_manifests(topology_manifests(parsed) + jobs)
    assert live.topology == constraint_of(scenario({"name": "dc", "required": "rack"}))
    assert live.topology is not None and live.topology.levels == ("zone", "topology.rack")
