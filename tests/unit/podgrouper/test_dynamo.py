"""Dynamo graphs: skipped as KAI's skip-top-owner does, the PodCliqueSet they own grouped by Grove's rule."""

from __future__ import annotations

import pytest
from muster.events import Topology
from muster.grouping.errors import ManifestError
from muster.grouping.registry import REGISTRY

from .support import NETWORK_TOPOLOGY, group_yaml, only, total_pods

GRAPH = """
apiVersion: nvidia.com/{version}
kind: DynamoGraphDeployment
metadata:
  name: llm
  labels: {{kai.scheduler/queue: inference-team, priorityClassName: build}}
spec:
  services:
    VllmWorker: {{replicas: 2}}
"""

CLIQUE_SET = """
apiVersion: grove.io/v1alpha1
kind: PodCliqueSet
metadata:
  name: llm
  labels: {{priorityClassName: inference}}
  ownerReferences: [{{apiVersion: nvidia.com/{version}, kind: DynamoGraphDeployment, name: llm, uid: u1}}]
spec:
  replicas: 1
  template:
    cliques:
      - name: worker
        spec:
          replicas: 2
          podSpec: {{containers: [{{name: w, resources: {{limits: {{nvidia.com/gpu: 1}}}}}}]}}
"""


@pytest.mark.parametrize("version", ["v1alpha1", "v1beta1", "v2"])
def test_a_graph_of_any_api_version_is_registered(version):
    # KAI v0.17 registers DynamoGraphDeployment with the version wildcard (v1alpha1 only before).
    assert REGISTRY.lookup(f"nvidia.com/{version}", "DynamoGraphDeployment").known


@pytest.mark.parametrize("version", ["v1alpha1", "v1beta1"])
def test_a_graph_is_grouped_as_the_podcliqueset_it_owns(version):
    group = only(group_yaml(GRAPH.format(version=version) + "---" + CLIQUE_SET.format(version=version)))
    assert (group.name, group.kind, group.min_available, total_pods(group)) == ("llm-0", "PodCliqueSet", 2, 2)


def test_the_graphs_labels_fill_in_under_the_podcliquesets_own():
    group = only(group_yaml(GRAPH.format(version="v1beta1") + "---" + CLIQUE_SET.format(version="v1beta1")))
    # the queue comes from the graph; the PodCliqueSet's own priority label wins over the graph's
    assert (group.queue, group.priority_class) == ("inference-team", "inference")


def test_a_graph_submitted_without_what_it_owns_is_refused_saying_why():
    with pytest.raises(ManifestError) as caught:
        group_yaml(GRAPH.format(version="v1beta1"))
    assert "does not derive the objects the Dynamo operator makes" in str(caught.value)


def test_an_error_in_the_owned_podcliqueset_names_that_document():
    bad = CLIQUE_SET.format(version="v1beta1").replace("replicas: 2", "replicas: -2")
    with pytest.raises(ManifestError) as caught:
        group_yaml(GRAPH.format(version="v1beta1") + "---" + bad)
    assert caught.value.document == 1
    assert caught.value.path == "spec.template.cliques[0].spec.replicas"


def test_the_graphs_topology_annotation_resolves_the_podcliquesets_pack_constraints():
    # The graph's annotations are merged under the PodCliqueSet's, so its grove.io/topology-name names the
    # KAI Topology the cliques' pack constraints are resolved against (podgrouper-rules.md §4.14).
    graph = GRAPH.format(version="v1beta1").replace(
        "name: llm\n", "name: llm\n  annotations: {grove.io/topology-name: network}\n", 1
    )
    packed = CLIQUE_SET.format(version="v1beta1").replace(
        "- name: worker\n", "- name: worker\n        topologyConstraint: {pack: {required: rack}}\n"
    )
    group = only(group_yaml(NETWORK_TOPOLOGY + "---" + graph + "---" + packed))
    assert group.subgroups[0].topology == Topology(
        required="accelerator.nvidia.com/rack",
        name="network",
        levels=("accelerator.nvidia.com/rack", "kubernetes.io/hostname"),
    )


def test_the_owned_podcliquesets_pods_carry_the_cliques_labels_and_groves():
    # The Dynamo operator writes its component labels on the cliques it makes; Grove copies them to pods.
    owned = CLIQUE_SET.format(version="v1beta1").replace(
        "      - name: worker\n",
        "      - name: worker\n        labels: {nvidia.com/dynamo-component-type: worker}\n",
    )
    (pod,) = only(group_yaml(GRAPH.format(version="v1beta1") + "---" + owned)).pods
    labels = ("nvidia.com/dynamo-component-type", "app.kubernetes.io/part-of", "grove.io/podclique")
    assert [pod.labels.get(k) for k in labels] == ["worker", "llm", "llm-0-worker"]
