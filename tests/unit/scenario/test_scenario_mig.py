"""MIG instances in a scenario are spelled as extended resources (``nvidia.com/mig-<g>g.<m>gb``) on a
node's capacity and a pod's request; what muster cannot count is an error naming the field."""

from __future__ import annotations

import pytest
from muster import events as ev
from muster.scenario import ScenarioError, parse_scenario, scenario_events

MIG_1G = "nvidia.com/mig-1g.10gb"


def scenario(pod: dict, node: dict | None = None) -> dict:
    return {
        "name": "s",
        "nodes": [{"name": "node-a", "resources": node or {MIG_1G: 7}}],
        "queues": [{"name": "team"}],
        "jobs": [{"name": "j", "queue": "team", "pods": [{"resources": pod}]}],
    }


def error_of(data: dict) -> ScenarioError:
    with pytest.raises(ScenarioError) as info:
        parse_scenario(data)
    return info.value


def test_mig_capacity_and_requests_reach_the_events_as_instances_of_their_profile():
    events = scenario_events(parse_scenario(scenario({MIG_1G: 2})))
    (node,) = [e.node for e in events if isinstance(e, ev.NodeRegistered)]
    (group,) = [e for e in events if isinstance(e, ev.PodGroupCreated)]
    assert node.resources.extended == {MIG_1G: 7}
    assert group.pods[0].resources.extended == {MIG_1G: 2}
    assert group.pods[0].resources.gpu == 0


def test_a_pod_mig_name_without_its_slices_is_an_error_naming_the_field():
    err = error_of(scenario({"nvidia.com/mig-1g.10gb+me": 1}))
    assert err.path == "jobs[0].pods[0].resources.nvidia.com/mig-1g.10gb+me"
    assert "nvidia.com/mig-<g>g.<m>gb" in err.message


def test_a_node_mig_name_without_its_slices_is_an_error_naming_the_field():
    err = error_of(scenario({MIG_1G: 1}, node={"nvidia.com/mig-1c.3g.20gb": 2}))
    assert err.path == "nodes[0].resources.nvidia.com/mig-1c.3g.20gb"


@pytest.mark.parametrize("gpus", [{"gpu": 1}, {"gpu": 0.5}, {"gpu_memory": "10Gi"}])
def test_a_pod_asking_for_mig_instances_and_gpus_is_an_error_naming_the_profile(gpus):
    err = error_of(scenario({MIG_1G: 1, **gpus}))
    assert err.path == f"jobs[0].pods[0].resources.{MIG_1G}"
    assert "not both" in err.message
