"""Scenario v1.1: pods' ``tolerations`` and ``affinity`` and nodes' ``taints`` in Kubernetes' spelling
reach the events; what muster cannot honour is an error naming the field."""

from __future__ import annotations

import pytest
from muster import events as ev
from muster.scenario import ScenarioError, parse_scenario, scenario_events

REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"


def scenario(pod: dict | None = None, node: dict | None = None) -> dict:
    return {
        "name": "s",
        "nodes": [{"name": "node-a", "resources": {"gpu": 1}, **(node or {})}],
        "queues": [{"name": "team"}],
        "jobs": [{"name": "j", "queue": "team", "pods": [{"resources": {"gpu": 1}, **(pod or {})}]}],
    }


def error_of(data: dict) -> ScenarioError:
    with pytest.raises(ScenarioError) as info:
        parse_scenario(data)
    return info.value


def events_of(data: dict) -> list[ev.Event]:
    return scenario_events(parse_scenario(data))


def test_node_taints_reach_the_node_spec():
    taint = {"key": "gpu", "value": "reserved", "effect": "NoSchedule"}
    (node,) = [
        e.node for e in events_of(scenario(node={"taints": [taint]})) if isinstance(e, ev.NodeRegistered)
    ]
    assert node.taints == [ev.Taint(key="gpu", value="reserved", effect="NoSchedule")]


def test_pod_tolerations_and_required_node_affinity_reach_the_pod_spec():
    affinity = {
        "nodeAffinity": {
            REQUIRED: {"nodeSelectorTerms": [{"matchExpressions": [{"key": "z", "operator": "Exists"}]}]}
        }
    }
    data = scenario(pod={"tolerations": [{"operator": "Exists"}], "affinity": affinity})
    (group,) = [e for e in events_of(data) if isinstance(e, ev.PodGroupCreated)]
    pod = group.pods[0]
    assert pod.tolerations == [ev.Toleration(operator="Exists")]
    assert pod.node_affinity[0].match_expressions == (ev.NodeSelectorRequirement(key="z", operator="Exists"),)


def test_a_taint_with_an_unknown_effect_names_the_field():
    err = error_of(scenario(node={"taints": [{"key": "gpu", "effect": "Never"}]}))
    assert err.path == "nodes[0].taints[0].effect"


def test_pod_labels_and_required_pod_anti_affinity_reach_the_pod_spec():
    term = {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "zone"}
    data = scenario(pod={"labels": {"app": "db"}, "affinity": {"podAntiAffinity": {REQUIRED: [term]}}})
    (group,) = [e for e in events_of(data) if isinstance(e, ev.PodGroupCreated)]
    pod = group.pods[0]
    assert pod.labels == {"app": "db"}
    assert pod.pod_anti_affinity == [
        ev.PodAffinityTerm(
            label_selector=ev.LabelSelector(
                match_expressions=(ev.LabelSelectorRequirement(key="app", operator="In", values=("db",)),)
            ),
            topology_key="zone",
        )
    ]


def test_a_preferred_pod_anti_affinity_term_without_its_term_names_the_field():
    preferred = "preferredDuringSchedulingIgnoredDuringExecution"
    err = error_of(scenario(pod={"affinity": {"podAntiAffinity": {preferred: [{"weight": 1}]}}}))
    assert (err.path, err.message) == (
        f"jobs[0].pods[0].affinity.podAntiAffinity.{preferred}[0].podAffinityTerm",
        "required field is missing",
    )


def test_an_unknown_key_in_a_toleration_names_the_field():
    assert error_of(scenario(pod={"tolerations": [{"key": "a", "effects": "NoSchedule"}]})).path == (
        "jobs[0].pods[0].tolerations[0].effects"
    )


def test_an_in_requirement_without_values_names_the_field():
    affinity = {
        "nodeAffinity": {
            REQUIRED: {"nodeSelectorTerms": [{"matchExpressions": [{"key": "z", "operator": "In"}]}]}
        }
    }
    assert error_of(scenario(pod={"affinity": affinity})).path == (
        f"jobs[0].pods[0].affinity.nodeAffinity.{REQUIRED}.nodeSelectorTerms[0].matchExpressions[0].values"
    )


def test_an_empty_toleration_operator_reads_as_equal():
    data = scenario(pod={"tolerations": [{"key": "gpu", "operator": "", "value": "x"}]})
    (group,) = [e for e in events_of(data) if isinstance(e, ev.PodGroupCreated)]
    assert group.pods[0].tolerations == [ev.Toleration(key="gpu", operator="Equal", value="x")]
