"""A KAI Topology is a cluster object (kai-semantics.md §18): submitted once, the podgrouper declares
it and holds it, and later submissions name it. A re-declaration may edit aliases, never the node
labels (KAI's topology_validator_test.go, ValidateUpdate); the held topologies are a fold of the
declarations, so whoever reads them back resolves a constraint the same way."""

from __future__ import annotations

import yaml
from muster.bounds import OutOfBounds, check
from muster.events import (
    PodGroupCreated,
    Topology,
    TopologyDeclared,
    TopologyLevel,
    WorkloadRejected,
    WorkloadSubmitted,
)
from muster.grouping.submission import group_submission
from muster.grouping.tenancy import Owners, decide_submission
from muster.held_topologies import HeldTopologies, declaration
from muster.topologies import Level, TopologyDef

from .support import NETWORK_TOPOLOGY as NETWORK

RACK, HOST = "accelerator.nvidia.com/rack", "kubernetes.io/hostname"
HELD_NETWORK = TopologyDef("network", (Level(RACK, "rack"), Level(HOST, "node")))


def job(name: str, topology: str, required: str) -> str:
    return f"""
apiVersion: batch/v1
kind: Job
metadata:
  name: {name}
  annotations: {{kai.scheduler/topology: {topology}, kai.scheduler/topology-required-placement: {required}}}
spec: {{template: {{spec: {{containers: [{{name: c}}]}}}}}}
"""


def submission(*docs: str, uid: str = "u") -> WorkloadSubmitted:
    manifests = [d for text in docs for d in yaml.safe_load_all(text) if d is not None]
    return WorkloadSubmitted(uid=uid, manifests=manifests)


def holding(*topologies: TopologyDef) -> HeldTopologies:
    held = HeldTopologies()
    for topo in topologies:
        held.apply(declaration(topo))
    return held


def test_a_declared_topology_is_held_by_its_name():
    assert holding(HELD_NETWORK).by_name == {"network": HELD_NETWORK}


def test_a_redeclaration_replaces_the_held_topology():
    moved = TopologyDef("network", (Level(RACK), Level(HOST, "rack")))
    assert holding(HELD_NETWORK, moved).by_name["network"] == moved


def test_events_other_than_declarations_leave_the_held_topologies_as_they_are():
    held = holding(HELD_NETWORK)
    held.apply(WorkloadRejected(uid="u", error="no"))
    assert held.by_name == {"network": HELD_NETWORK}


def test_a_topology_submitted_alone_is_declared():
    assert group_submission(submission(NETWORK, uid="t")) == [
        TopologyDeclared(
            name="network",
            levels=[TopologyLevel(label=RACK, alias="rack"), TopologyLevel(label=HOST, alias="node")],
            workload_uid="t",
        )
    ]


def test_a_later_workload_names_a_held_topology_by_its_alias():
    held = holding(HELD_NETWORK)
    [group] = group_submission(submission(job("j", "network", "rack")), held=held.by_name)
    assert isinstance(group, PodGroupCreated)
    assert group.topology == Topology(name="network", levels=(RACK, HOST), required=RACK)


def test_a_topology_held_unchanged_is_not_declared_again():
    held = holding(HELD_NETWORK)
    events = group_submission(submission(NETWORK, job("j", "network", "node")), held=held.by_name)
    assert [type(e) for e in events] == [PodGroupCreated]


def test_a_redeclaration_changing_a_node_label_is_refused_naming_the_levels():
    # KAI: "should reject changes to the nodeLabel structure" (changing a nodeLabel)
    changed = NETWORK.replace(RACK, "accelerator.nvidia.com/zone")
    [answer] = group_submission(submission(changed), held=holding(HELD_NETWORK).by_name)
    assert isinstance(answer, WorkloadRejected)
    assert answer.field == "spec.levels" and "immutable" in answer.error


def test_a_redeclaration_adding_a_level_is_refused_with_the_workloads_it_carries():
    # KAI: "should reject changes to the nodeLabel structure" (adding a level)
    zoned = NETWORK.replace("  levels:\n", "  levels:\n    - {nodeLabel: accelerator.nvidia.com/zone}\n")
    [answer] = group_submission(
        submission(zoned, job("j", "network", "rack")), held=holding(HELD_NETWORK).by_name
    )
    assert isinstance(answer, WorkloadRejected) and answer.field == "spec.levels"


def test_a_redeclaration_moving_an_alias_is_declared_and_resolves_its_own_workloads():
    # KAI: "should allow re-pointing an alias to a different level"
    moved = NETWORK.replace("alias: rack", "alias: top").replace("alias: node", "alias: rack")
    events = group_submission(
        submission(moved, job("j", "network", "rack")), held=holding(HELD_NETWORK).by_name
    )
    declared, group = events
    assert isinstance(declared, TopologyDeclared) and declared.levels[1].alias == "rack"
    assert isinstance(group, PodGroupCreated) and group.topology.required == HOST


def test_a_workload_naming_a_topology_neither_held_nor_submitted_is_refused_naming_the_field():
    [answer] = group_submission(submission(job("j", "fabric", "rack")), held=holding(HELD_NETWORK).by_name)
    assert isinstance(answer, WorkloadRejected)
    assert answer.field == "metadata.annotations.kai.scheduler/topology" and "'fabric'" in answer.error


def test_a_tenants_workload_names_a_held_topology():
    [group] = decide_submission(
        Owners(), "team", "q", submission(job("j", "network", "rack")), held=holding(HELD_NETWORK).by_name
    )
    assert isinstance(group, PodGroupCreated) and group.topology.required == RACK


def test_a_tenant_declares_no_topology():
    [answer] = decide_submission(Owners(), "team", "q", submission(NETWORK))
    assert isinstance(answer, WorkloadRejected) and answer.field == "kind" and "tenant" in answer.error


def test_a_tenants_own_topology_serves_its_own_workloads_and_is_not_declared():
    moved = NETWORK.replace("alias: rack", "alias: top").replace("alias: node", "alias: rack")
    [group] = decide_submission(
        Owners(),
        "team",
        "q",
        submission(moved, job("j", "network", "rack")),
        held=holding(HELD_NETWORK).by_name,
    )
    assert isinstance(group, PodGroupCreated) and group.topology.required == HOST


def test_admission_refuses_a_declaration_kai_would_not_accept():
    twice = TopologyDeclared(name="t", levels=[TopologyLevel(label=RACK), TopologyLevel(label=RACK)])
    try:
        check([twice])
    except OutOfBounds as exc:
        assert exc.path == "$.events[0].levels[1].nodeLabel"
    else:
        raise AssertionError("a topology with one label twice was admitted")
