"""Grove fields that would change where a PodCliqueSet's pods run, which muster cannot honour or Grove
does not have there: refused by name, never dropped."""

from __future__ import annotations

import pytest
from muster.grouping.errors import ManifestError

from .support import group_yaml

PCS = """
apiVersion: grove.io/v1alpha1
kind: PodCliqueSet
metadata: {{name: g, annotations: {{{pcs_notes}}}}}
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


def pcs(
    template: str = "", clique: str = "", clique_spec: str = "", group: str = "", pcs_notes: str = ""
) -> str:
    return PCS.format(
        template=template, clique=clique, clique_spec=clique_spec, group=group, pcs_notes=pcs_notes
    )


def refusal(**parts: str) -> ManifestError:
    with pytest.raises(ManifestError) as caught:
        group_yaml(pcs(**parts))
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
    groups = group_yaml(pcs())
    assert [g.name for g in groups] == ["g-0"]


@pytest.mark.parametrize(
    ("parts", "path"),
    [
        ({"pcs_notes": "grove.io/mnnvl-group: '1'"}, "metadata.annotations.grove.io/mnnvl-group"),
        (
            {"clique": "annotations: {grove.io/mnnvl-group: fabric}"},
            "spec.template.cliques[0].annotations.grove.io/mnnvl-group",
        ),
        (
            {"group": ", annotations: {grove.io/mnnvl-group: '2'}"},
            "spec.template.podCliqueScalingGroups[0].annotations.grove.io/mnnvl-group",
        ),
        ({"pcs_notes": "grove.io/auto-mnnvl: enabled"}, "metadata.annotations.grove.io/auto-mnnvl"),
    ],
)
def test_an_mnnvl_enrolment_is_refused_by_name_since_its_computedomain_claim_is_not_placed(parts, path):
    err = refusal(**parts)
    assert err.path == path
    assert "ComputeDomain" in err.message


@pytest.mark.parametrize("notes", ["grove.io/mnnvl-group: none", "grove.io/auto-mnnvl: disabled"])
def test_opting_out_of_mnnvl_is_grouped_as_without_it(notes):
    assert [g.name for g in group_yaml(pcs(pcs_notes=notes))] == ["g-0"]
