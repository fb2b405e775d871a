"""Grove fields that would change where a PodCliqueSet's pods run, which muster cannot honour: refused
by name, never dropped."""

from __future__ import annotations

import pytest
from muster.grouping.errors import ManifestError

from .support import group_yaml

PCS = """
apiVersion: grove.io/v1alpha1
kind: PodCliqueSet
metadata: {{name: g}}
spec:
  template:
    {template}
    cliques:
      - name: worker
        {clique}
        spec: {{replicas: 2, {clique_spec} podSpec: {{containers: [{{name: c}}]}}}}
    podCliqueScalingGroups:
      - {{name: sg, cliqueNames: [worker], replicas: 1, minAvailable: 1 {group}}}
"""


def refusal(template: str = "", clique: str = "", clique_spec: str = "", group: str = "") -> ManifestError:
    with pytest.raises(ManifestError) as caught:
        group_yaml(PCS.format(template=template, clique=clique, clique_spec=clique_spec, group=group))
    return caught.value


def test_the_podcliquesets_own_topology_constraint_is_refused_by_name():
    err = refusal(template="topologyConstraint: {packDomain: rack}")
    assert err.path == "spec.template.topologyConstraint"
    assert "does not honour" in err.message and "ClusterTopology" in err.message


def test_a_cliques_topology_constraint_is_refused_by_name():
    err = refusal(clique_spec="topologyConstraint: {packDomain: host},")
    assert err.path == "spec.template.cliques[0].spec.topologyConstraint"


def test_a_scaling_groups_topology_constraint_grove_parent_is_refused_by_name():
    err = refusal(group=", topologyConstraint: {packDomain: block}")
    assert err.path == "spec.template.podCliqueScalingGroups[0].topologyConstraint"


def test_shared_resource_claims_are_refused_by_name():
    err = refusal(template="resourceSharing: [{name: gpus, scope: AllReplicas}]")
    assert err.path == "spec.template.resourceSharing"
    assert "dynamic resource claims" in err.message


def test_a_podcliqueset_without_those_fields_is_still_grouped():
    groups = group_yaml(PCS.format(template="", clique="", clique_spec="", group=""))
    assert [g.name for g in groups] == ["g-0"]
