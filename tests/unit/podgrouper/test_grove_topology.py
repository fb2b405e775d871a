"""Grove's topology (podgrouper-rules.md §4.14, §4.17): a PodCliqueSet's pack constraints become its
PodGang's, on the root, on the parents Grove makes of a constrained scaling group's replicas
(``topologyConstraintGroupConfigs``) and on the cliques' leaves, each resolved against the KAI Topology
the PodCliqueSet names. Written from KAI's grove_grouper_test.go (v0.17), each test naming its case."""

from __future__ import annotations

import pytest
import yaml
from muster.events import SubGroup, Topology
from muster.grouping.errors import ManifestError
from muster.grouping.group import group_manifests
from muster.topologies import Level, TopologyDef

from .support import group_yaml, manifest_docs

ZONE, RACK, HOST = "example.com/zone", "example.com/rack", "kubernetes.io/hostname"
LEVELS = (ZONE, RACK, HOST)

TEST_TOPOLOGY = """
apiVersion: kai.scheduler/v1alpha1
kind: Topology
metadata: {name: test-topology}
spec:
  levels:
    - {nodeLabel: example.com/zone, alias: zone}
    - {nodeLabel: example.com/rack, alias: rack}
    - {nodeLabel: kubernetes.io/hostname, alias: node}
"""
"""KAI's test topology: zone over rack over node, each level with the alias Grove's pack domains use."""


def on(required: str | None = None, preferred: str | None = None) -> Topology:
    """A constraint of ``test-topology`` at the given label keys."""
    return Topology(required=required, preferred=preferred, name="test-topology", levels=LEVELS)


def pcs(
    template: str = "",
    group: str = "topologyConstraint: {pack: {required: rack}}",
    prefill: str = "",
    annotations: str = "{grove.io/topology-name: test-topology}",
    group_replicas: str = "replicas: 1, minAvailable: 1",
) -> str:
    """A PodCliqueSet ``p``: cliques ``prefill`` and ``decode`` in a scaling group ``sg``, a standalone
    ``router``; each fragment a flow-mapping entry (or '')."""
    return f"""
apiVersion: grove.io/v1alpha1
kind: PodCliqueSet
metadata: {{name: p, annotations: {annotations}}}
spec:
  template:
    {template}
    podCliqueScalingGroups:
      - {{name: sg, cliqueNames: [prefill, decode], {group_replicas}, {group}}}
    cliques:
      - {{name: prefill, {prefill} spec: {{replicas: 2, podSpec: {{containers: [{{name: c}}]}}}}}}
      - {{name: decode, spec: {{replicas: 2, podSpec: {{containers: [{{name: c}}]}}}}}}
      - {{name: router, spec: {{replicas: 1, podSpec: {{containers: [{{name: c}}]}}}}}}
"""


def base(text: str, **kwargs) -> object:
    """The base PodGang's group of ``text`` submitted with KAI's test topology."""
    return group_yaml(TEST_TOPOLOGY + "---" + text, **kwargs)[0]


def test_each_scaling_replica_in_the_base_gang_is_a_parent_needing_all_its_cliques():
    # TestGetPodGroupMetadata_MultipleParentGroups / _MixedParenting: one parent per config, named after
    # it, minSubGroup = its podGroupNames (v0.16); a clique no config lists hangs off the root.
    group = base(pcs(group_replicas="replicas: 2, minAvailable: 2"))
    rack = on(required=RACK)
    assert group.subgroups == [
        SubGroup(name="p-0-sg-0", min_subgroup=2, topology=rack),
        SubGroup(name="p-0-sg-1", min_subgroup=2, topology=rack),
        SubGroup(name="p-0-router", min_available=1),
        SubGroup(name="p-0-sg-0-prefill", min_available=2, parent="p-0-sg-0"),
        SubGroup(name="p-0-sg-0-decode", min_available=2, parent="p-0-sg-0"),
        SubGroup(name="p-0-sg-1-prefill", min_available=2, parent="p-0-sg-1"),
        SubGroup(name="p-0-sg-1-decode", min_available=2, parent="p-0-sg-1"),
    ]
    assert group.min_subgroup is None and group.min_available == 9


def test_a_scaling_group_without_a_topology_constraint_makes_no_parent():
    # TestGetPodGroupMetadata_WithoutTopologyConstraintGroupConfigs: Grove writes a config only for a
    # scaling group that states a topologyConstraint, so its cliques hang off the root, packed as their own.
    group = base(pcs(group="", prefill="topologyConstraint: {pack: {preferred: node}},"))
    assert [(s.name, s.parent, s.topology) for s in group.subgroups] == [
        ("p-0-router", None, None),
        ("p-0-sg-0-prefill", None, on(preferred=HOST)),
        ("p-0-sg-0-decode", None, None),
    ]


def test_pack_constraints_of_root_parent_and_leaf_resolve_to_the_topologys_labels():
    # TestGetPodGroupMetadata_WithTopologyHierarchy / _ThreeLevelTopologyWithLeafVerification.
    group = base(
        pcs(
            template="topologyConstraint: {pack: {required: zone, preferred: rack}}",
            group="topologyConstraint: {pack: {required: rack, preferred: node}}",
            prefill="topologyConstraint: {pack: {preferred: node}},",
        )
    )
    assert group.topology == on(required=ZONE, preferred=RACK)
    tree = {s.name: s.topology for s in group.subgroups}
    assert tree["p-0-sg-0"] == on(required=RACK, preferred=HOST)
    assert tree["p-0-sg-0-prefill"] == on(preferred=HOST)
    assert tree["p-0-sg-0-decode"] is None and tree["p-0-router"] is None


@pytest.mark.parametrize(
    ("pack", "expected"),
    [("{preferred: rack}", on(preferred=RACK)), ("{required: zone}", on(required=ZONE))],
    ids=["PodGangPreferredOnly", "PodGangRequiredOnly"],
)
def test_a_root_pack_with_one_level_constrains_only_that_level(pack, expected):
    # TestGetPodGroupMetadata_PodGangPreferredOnly / _PodGangRequiredOnly
    assert base(pcs(template=f"topologyConstraint: {{pack: {pack}}}", group="")).topology == expected


def test_the_root_pack_and_grove_topology_name_win_over_the_kai_annotations():
    # TestGetPodGroupMetadata_SpecOverridesAnnotation
    other = TEST_TOPOLOGY.replace("test-topology", "anno-topology")
    notes = (
        "{grove.io/topology-name: test-topology, kai.scheduler/topology: anno-topology,"
        " kai.scheduler/topology-required-placement: rack, kai.scheduler/topology-preferred-placement: node}"
    )
    group = base(
        other + "---" + pcs(template="topologyConstraint: {pack: {required: zone}}", annotations=notes)
    )
    assert group.topology == on(required=ZONE, preferred=HOST)


def test_a_root_level_the_pack_leaves_empty_comes_from_the_kai_annotation():
    # KAI's parseMetadataFromTopOwner: root levels still empty are filled from the merged annotations.
    notes = "{grove.io/topology-name: test-topology, kai.scheduler/topology-required-placement: zone}"
    group = base(pcs(template="topologyConstraint: {pack: {preferred: rack}}", annotations=notes))
    assert group.topology == on(required=ZONE, preferred=RACK)


def test_kai_topology_names_the_topology_when_grove_names_none():
    # KAI's getTopology: grove.io/topology-name, else kai.scheduler/topology.
    # Without a pack of its own the root keeps the annotations' constraint (KAI's default grouper gives
    # it the name even without a level: a configuration error muster refuses, so the root is given one).
    notes = "{kai.scheduler/topology: test-topology, kai.scheduler/topology-required-placement: zone}"
    group = base(pcs(annotations=notes))
    assert (group.topology, group.subgroups[0].topology) == (on(required=ZONE), on(required=RACK))


def test_a_constraints_topology_name_names_the_topology():
    # Grove writes a PodCliqueSet's topologyName onto its PodGang as grove.io/topology-name.
    group = base(
        pcs(
            annotations="{}",
            group="topologyConstraint: {topologyName: test-topology, pack: {required: rack}}",
        )
    )
    assert group.subgroups[0].topology == on(required=RACK)


def test_constraints_naming_two_topologies_are_refused_naming_the_second():
    text = pcs(
        annotations="{}",
        template="topologyConstraint: {topologyName: test-topology, pack: {required: zone}}",
        group="topologyConstraint: {topologyName: other, pack: {required: rack}}",
    )
    with pytest.raises(ManifestError) as caught:
        base(text)
    assert caught.value.path == "spec.template.podCliqueScalingGroups[0].topologyConstraint.topologyName"


def test_a_pack_constraint_without_a_topology_name_is_refused_naming_it():
    # TestGetPodGroupMetadata_EmptyTopology: KAI errors when a pack constraint has no topology name.
    with pytest.raises(ManifestError) as caught:
        base(pcs(annotations="{}", group="", prefill="topologyConstraint: {pack: {required: node}},"))
    assert caught.value.path == "spec.template.cliques[0].topologyConstraint.pack.required"
    assert "needs a topology name" in caught.value.message


def test_a_pack_level_the_topology_does_not_have_is_refused_naming_it():
    with pytest.raises(ManifestError) as caught:
        base(pcs(group="topologyConstraint: {pack: {required: socket}}"))
    assert caught.value.path == "spec.template.podCliqueScalingGroups[0].topologyConstraint.pack.required"


def test_a_topology_held_by_the_system_resolves_a_pack():
    held = TopologyDef("test-topology", (Level(ZONE, "zone"), Level(RACK, "rack"), Level(HOST, "node")))
    group = group_yaml(pcs(), held={"test-topology": held})[0]
    assert group.subgroups[0].topology == on(required=RACK)


def test_the_podgangs_spelling_packconstraint_reads_as_pack():
    group = base(pcs(group="topologyConstraint: {packConstraint: {required: rack}}"))
    assert group.subgroups[0].topology == on(required=RACK)


def test_the_deprecated_pack_domain_is_a_required_level():
    group = base(pcs(group="topologyConstraint: {packDomain: rack}"))
    assert group.subgroups[0].topology == on(required=RACK)


def test_a_scaled_gang_is_packed_by_its_scaling_groups_constraint():
    # Grove: a scaled PodGang's constraint is its scaling group's, else the PodCliqueSet's.
    groups = group_yaml(
        TEST_TOPOLOGY
        + "---"
        + pcs(
            template="topologyConstraint: {pack: {required: zone}}",
            group_replicas="replicas: 2, minAvailable: 1",
        )
    )
    assert [(g.name, g.topology) for g in groups] == [
        ("p-0", on(required=ZONE)),
        ("p-0-sg-0", on(required=RACK)),
    ]
    assert all(s.parent is None for s in groups[1].subgroups)


def test_a_scaled_gang_of_an_unconstrained_scaling_group_is_packed_as_the_podcliqueset():
    groups = group_yaml(
        TEST_TOPOLOGY
        + "---"
        + pcs(
            template="topologyConstraint: {pack: {required: zone}}",
            group="",
            group_replicas="replicas: 2, minAvailable: 1",
        )
    )
    assert [g.topology for g in groups] == [on(required=ZONE), on(required=ZONE)]


def test_grove_upstream_example_with_a_clique_packed_onto_one_node():
    # Grove's single-node-aggregated sample, its model-worker clique given a pack constraint as Grove's
    # topology guide writes one.
    [pcs_doc] = manifest_docs("podcliqueset/grove__single-node-aggregated.yaml")
    pcs_doc["metadata"]["annotations"] = {"grove.io/topology-name": "test-topology"}
    pcs_doc["spec"]["template"]["cliques"][0]["topologyConstraint"] = {"pack": {"required": "node"}}
    [group] = group_manifests([*yaml.safe_load_all(TEST_TOPOLOGY), pcs_doc])
    assert group.subgroups == [
        SubGroup(name="single-node-aggregated-0-model-worker", min_available=2, topology=on(required=HOST))
    ]
