"""Grove fields that would change where a PodCliqueSet's pods run, which muster cannot honour or Grove
does not have there: refused by name, never dropped."""

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


def test_a_topology_constraint_inside_a_cliques_spec_is_refused_saying_where_grove_reads_it():
    err = refusal(clique_spec="topologyConstraint: {packDomain: host},")
    assert err.path == "spec.template.cliques[0].spec.topologyConstraint"
    assert "beside its spec" in err.message


def test_a_field_grove_has_not_in_a_topology_constraint_is_refused_by_name():
    err = refusal(group=", topologyConstraint: {spreadDomain: rack}")
    assert err.path == "spec.template.podCliqueScalingGroups[0].topologyConstraint.spreadDomain"


def test_shared_resource_claims_are_refused_by_name():
    err = refusal(template="resourceSharing: [{name: gpus, scope: AllReplicas}]")
    assert err.path == "spec.template.resourceSharing"
    assert "dynamic resource claims" in err.message


def test_a_podcliqueset_without_those_fields_is_still_grouped():
    groups = group_yaml(PCS.format(template="", clique="", clique_spec="", group=""))
    assert [g.name for g in groups] == ["g-0"]
