"""KAI's ``kai.scheduler/v1alpha1`` Topology manifest submitted with the workloads that name it
(kai-semantics.md §18): their constraints resolve against it, aliases included, and what does not fit
it is refused naming the field. The manifest shapes are KAI's examples/topology-aliases."""

from __future__ import annotations

import pytest
from muster.events import Topology
from muster.grouping.errors import ManifestError

from .support import NETWORK_TOPOLOGY as NETWORK
from .support import group_yaml, only


def job(annotations: str) -> str:
    return f"""
apiVersion: batch/v1
kind: Job
metadata: {{name: j, annotations: {annotations}}}
spec: {{template: {{spec: {{containers: [{{name: c}}]}}}}}}
"""


def podgroup(constraint: str) -> str:
    return f"""
apiVersion: scheduling.run.ai/v2alpha2
kind: PodGroup
metadata: {{name: aliased-topology-job}}
spec: {{queue: default-queue, minMember: 1, topologyConstraint: {constraint}}}
---
apiVersion: v1
kind: Pod
metadata: {{name: p, annotations: {{pod-group-name: aliased-topology-job}}}}
spec: {{containers: [{{name: c}}]}}
"""


def submitted(*docs: str) -> str:
    return "\n---\n".join(docs)


def test_a_workload_names_its_level_by_alias_and_gets_the_topologys_levels():
    group = only(
        group_yaml(
            submitted(
                NETWORK,
                job("{kai.scheduler/topology: network, kai.scheduler/topology-required-placement: rack}"),
            )
        )
    )
    assert group.topology == Topology(
        name="network",
        levels=("accelerator.nvidia.com/rack", "kubernetes.io/hostname"),
        required="accelerator.nvidia.com/rack",
    )


def test_an_external_podgroups_constraint_resolves_against_the_topology():
    groups = group_yaml(submitted(NETWORK, podgroup("{topology: network, requiredTopologyLevel: rack}")))
    assert only(groups).topology.required == "accelerator.nvidia.com/rack"


def subgrouped(constraint: str) -> str:
    return f"""
apiVersion: scheduling.run.ai/v2alpha2
kind: PodGroup
metadata: {{name: nested}}
spec:
  queue: default-queue
  topologyConstraint: {{topology: network, requiredTopologyLevel: rack}}
  subGroups: [{{name: a, minMember: 1, topologyConstraint: {constraint}}}]
---
apiVersion: v1
kind: Pod
metadata: {{name: p, annotations: {{pod-group-name: nested}}, labels: {{kai.scheduler/subgroup-name: a}}}}
spec: {{containers: [{{name: c}}]}}
"""


def test_a_subgroups_own_constraint_resolves_against_the_topology_as_the_podgroups_does():
    group = only(
        group_yaml(submitted(NETWORK, subgrouped("{topology: network, requiredTopologyLevel: node}")))
    )
    assert group.subgroups[0].topology == Topology(
        name="network",
        levels=("accelerator.nvidia.com/rack", "kubernetes.io/hostname"),
        required="kubernetes.io/hostname",
    )


def test_a_subgroups_level_that_is_not_in_the_topology_is_refused_naming_its_field():
    text = submitted(NETWORK, subgrouped("{topology: network, requiredTopologyLevel: zone}"))
    with pytest.raises(ManifestError) as info:
        group_yaml(text)
    assert info.value.path == "spec.subGroups[0].topologyConstraint.requiredTopologyLevel"


def test_a_level_that_is_not_in_the_topology_is_refused_naming_the_annotation():
    text = submitted(
        NETWORK, job("{kai.scheduler/topology: network, kai.scheduler/topology-preferred-placement: zone}")
    )
    with pytest.raises(ManifestError) as info:
        group_yaml(text)
    assert info.value.path == "metadata.annotations.kai.scheduler/topology-preferred-placement"
    assert info.value.document == 1


def test_a_topology_the_submission_does_not_hold_is_refused_naming_the_field():
    text = submitted(NETWORK, podgroup("{topology: fabric, requiredTopologyLevel: rack}"))
    with pytest.raises(ManifestError) as info:
        group_yaml(text)
    assert info.value.path == "spec.topologyConstraint.topology" and "'fabric'" in info.value.message


def test_a_malformed_topology_is_refused_naming_its_document_and_field():
    bad = NETWORK.replace("alias: node", "alias: rack")
    with pytest.raises(ManifestError) as info:
        group_yaml(submitted(bad, job("{}")))
    assert (info.value.document, info.value.path) == (0, "spec.levels[1].alias")


def test_a_topology_field_kai_does_not_have_is_refused():
    bad = NETWORK.replace("spec:\n", "spec:\n  root: x\n")
    with pytest.raises(ManifestError) as info:
        group_yaml(submitted(bad, job("{}")))
    assert info.value.path == "spec.root"


def test_without_a_topology_in_the_submission_the_levels_are_node_labels():
    group = only(
        group_yaml(job("{kai.scheduler/topology: t, kai.scheduler/topology-required-placement: rack}"))
    )
    assert group.topology == Topology(required="rack")


def test_grouping_a_topology_alone_without_a_system_says_to_submit_it_to_the_running_one():
    with pytest.raises(ManifestError, match="`muster submit` it to the running system"):
        group_yaml(NETWORK)


SEGMENTED = """
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {{name: seg}}
spec:
  pytorchReplicaSpecs:
    Worker:
      replicas: 4
      template:
        metadata:
          annotations:
            kai.scheduler/segment-size: "2"
            kai.scheduler/topology: network
            kai.scheduler/segment-topology-required-placement: {level}
        spec: {{containers: [{{name: c}}]}}
"""


def test_a_segments_level_resolves_by_alias_against_the_topology():
    group = only(group_yaml(submitted(NETWORK, SEGMENTED.format(level="rack"))))
    assert [s.topology.required if s.topology else None for s in group.subgroups] == [
        None,
        "accelerator.nvidia.com/rack",
        "accelerator.nvidia.com/rack",
    ]


def test_a_segments_level_that_is_not_in_the_topology_is_refused_naming_its_annotation():
    with pytest.raises(ManifestError) as info:
        group_yaml(submitted(NETWORK, SEGMENTED.format(level="zone")))
    assert info.value.path == (
        "spec.pytorchReplicaSpecs.Worker.template.metadata.annotations."
        "kai.scheduler/segment-topology-required-placement"
    )
