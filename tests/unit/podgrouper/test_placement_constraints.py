"""A pod spec's tolerations and node affinity reach the group; what muster does not honour is refused by
name, never dropped (kai-semantics.md §16)."""

from __future__ import annotations

import pytest
from muster import events as ev
from muster.grouping.errors import ManifestError

from .support import group_file, group_yaml, only, pods_by_role

PYTORCH = """
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: train}
spec:
  pytorchReplicaSpecs:
    Worker:
      replicas: 2
      template:
        spec:
          containers: [{name: c, image: i, resources: {limits: {nvidia.com/gpu: 1}}}]
"""
WORKER_SPEC = "spec.pytorchReplicaSpecs.Worker.template.spec"


def pytorch(**pod_fields: str) -> str:
    """The PyTorchJob above with extra pod-spec fields, each given as YAML flow text."""
    extra = "".join(f"          {key}: {value}\n" for key, value in pod_fields.items())
    return PYTORCH + extra


def refusal(text: str) -> ManifestError:
    with pytest.raises(ManifestError) as err:
        group_yaml(text)
    return err.value


def test_tolerations_and_required_node_affinity_reach_the_pods():
    group = only(
        group_yaml(
            pytorch(
                tolerations="[{key: gpu, operator: Exists, effect: NoSchedule}]",
                affinity="{nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: "
                "{nodeSelectorTerms: [{matchExpressions: [{key: zone, operator: In, values: [a, b]}]}]}}}",
            )
        )
    )
    pod = group.pods[0]
    assert pod.tolerations == [ev.Toleration(key="gpu", operator="Exists", effect="NoSchedule")]
    assert pod.node_affinity == [
        ev.NodeSelectorTerm(
            match_expressions=(ev.NodeSelectorRequirement(key="zone", operator="In", values=("a", "b")),)
        )
    ]


def test_a_toleration_with_an_unknown_effect_is_refused_naming_the_field():
    err = refusal(pytorch(tolerations="[{key: gpu, operator: Exists, effect: Sometimes}]"))
    assert err.path == f"{WORKER_SPEC}.tolerations[0].effect"
    assert err.message == "expected one of NoSchedule, PreferNoSchedule, NoExecute, got 'Sometimes'"


def test_a_toleration_without_a_key_must_use_exists():
    assert refusal(pytorch(tolerations="[{value: x}]")).path == f"{WORKER_SPEC}.tolerations[0].operator"


def test_a_gt_requirement_needs_one_integer():
    err = refusal(
        pytorch(
            affinity="{nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: "
            "{nodeSelectorTerms: [{matchExpressions: [{key: cores, operator: Gt, values: [many]}]}]}}}"
        )
    )
    required = "affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
    assert err.path == f"{WORKER_SPEC}.{required}.nodeSelectorTerms[0].matchExpressions[0].values[0]"


@pytest.mark.parametrize(
    ("fields", "refused"),
    [
        ({"topologySpreadConstraints": "[{maxSkew: 1, topologyKey: zone}]"}, "topologySpreadConstraints"),
        ({"nodeName": "node-1"}, "nodeName"),
        (
            {
                "affinity": "{podAntiAffinity: {requiredDuringSchedulingIgnoredDuringExecution: [{topologyKey: z}]}}"
            },
            "affinity.podAntiAffinity",
        ),
        (
            {"affinity": "{podAffinity: {preferredDuringSchedulingIgnoredDuringExecution: [{}]}}"},
            "affinity.podAffinity",
        ),
        (
            {"affinity": "{nodeAffinity: {preferredDuringSchedulingIgnoredDuringExecution: [{weight: 1}]}}"},
            "affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution",
        ),
    ],
)
def test_a_placement_field_muster_does_not_honour_is_refused_by_name(fields, refused):
    err = refusal(pytorch(**fields))
    assert err.path == f"{WORKER_SPEC}.{refused}"
    assert "muster does not honour it" in err.message


def test_a_container_host_port_is_refused_by_name():
    text = PYTORCH.replace("resources:", "ports: [{containerPort: 80, hostPort: 8080}], resources:")
    assert refusal(text).path == f"{WORKER_SPEC}.containers[0].ports[0].hostPort"


def test_dynamic_resource_claims_are_refused_by_name_not_dropped():
    assert refusal(pytorch(resourceClaims="[{name: gpu, resourceClaimTemplateName: one-gpu}]")).path == (
        f"{WORKER_SPEC}.resourceClaims"
    )
    text = PYTORCH.replace("{limits: {nvidia.com/gpu: 1}}", "{claims: [{name: gpu}]}")
    assert refusal(text).path == f"{WORKER_SPEC}.containers[0].resources.claims"


def test_spark_roles_carry_their_own_tolerations():
    group = only(
        group_yaml(
            """
apiVersion: sparkoperator.k8s.io/v1beta2
kind: SparkApplication
metadata: {name: pi}
spec:
  driver: {cores: 1, memory: 512m, tolerations: [{key: spark, operator: Exists}]}
  executor: {cores: 1, instances: 2, memory: 512m}
"""
        )
    )
    pods = pods_by_role(group)
    assert pods["driver"].tolerations == [ev.Toleration(key="spark", operator="Exists")]
    assert pods["executor"].tolerations == []


ARGO = """
apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata: {name: wf}
spec:
  entrypoint: main
  tolerations: [{key: wf, operator: Exists}]
  templates:
    - name: main
      steps: [[{name: a, template: own}, {name: b, template: plain}]]
    - name: own
      tolerations: [{key: own, operator: Exists}]
      container: {image: i}
    - name: plain
      container: {image: i}
"""


def test_an_argo_step_takes_its_templates_tolerations_else_the_workflows():
    tolerations = {g.pods[0].tolerations[0].key for g in group_yaml(ARGO)}
    assert tolerations == {"own", "wf"}


def test_the_grove_example_keeps_its_fake_node_toleration():
    groups = group_file("podcliqueset/grove__single-node-aggregated.yaml")
    assert {t.key for g in groups for p in g.pods for t in p.tolerations} == {"fake-node"}
