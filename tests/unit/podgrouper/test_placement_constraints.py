"""A pod spec's tolerations and node affinity reach the group; what muster does not honour is refused by
name, never dropped (kai-semantics.md §16)."""

from __future__ import annotations

import pytest
from muster import events as ev
from muster.grouping.errors import ManifestError

from .support import WORKER_SPEC, group_file, group_yaml, only, pods_by_role, two_pytorch_workers

PYTORCH = two_pytorch_workers("{limits: {nvidia.com/gpu: 1}}")


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
                "affinity": "{podAffinity: {requiredDuringSchedulingIgnoredDuringExecution: "
                "[{topologyKey: z, labelSelector: {}, matchLabelKeys: [pod-template-hash]}]}}"
            },
            "affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].matchLabelKeys",
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


ANTI = "affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution"


def test_required_pod_affinity_terms_and_the_template_labels_reach_the_pods():
    text = PYTORCH.replace(
        "      template:\n", "      template:\n        metadata: {labels: {app: train, tier: gpu}}\n"
    ) + (
        "          affinity:\n"
        "            podAffinity:\n"
        "              requiredDuringSchedulingIgnoredDuringExecution:\n"
        "                - {labelSelector: {matchLabels: {app: cache}}, topologyKey: zone}\n"
        "            podAntiAffinity:\n"
        "              requiredDuringSchedulingIgnoredDuringExecution:\n"
        "                - labelSelector:\n"
        "                    matchLabels: {app: train}\n"
        "                    matchExpressions: [{key: tier, operator: Exists}]\n"
        "                  topologyKey: kubernetes.io/hostname\n"
    )
    pod = only(group_yaml(text)).pods[0]
    assert pod.labels == {
        "app": "train",
        "tier": "gpu",
        "training.kubeflow.org/job-name": "train",
        "training.kubeflow.org/operator-name": "pytorchjob-controller",
        "training.kubeflow.org/replica-type": "worker",
    }
    in_cache = ev.LabelSelectorRequirement(key="app", operator="In", values=("cache",))
    assert pod.pod_affinity == [
        ev.PodAffinityTerm(
            label_selector=ev.LabelSelector(match_expressions=(in_cache,)), topology_key="zone"
        )
    ]
    (term,) = pod.pod_anti_affinity
    assert term.topology_key == "kubernetes.io/hostname"
    assert term.label_selector == ev.LabelSelector(
        match_expressions=(
            ev.LabelSelectorRequirement(key="app", operator="In", values=("train",)),
            ev.LabelSelectorRequirement(key="tier", operator="Exists"),
        )
    )


def test_a_term_without_a_selector_selects_nothing_and_is_kept_so():
    text = pytorch(
        affinity="{podAntiAffinity: {requiredDuringSchedulingIgnoredDuringExecution: [{topologyKey: z}]}}"
    )
    assert only(group_yaml(text)).pods[0].pod_anti_affinity == [ev.PodAffinityTerm(topology_key="z")]


@pytest.mark.parametrize(
    ("term", "field", "message"),
    [
        ("{labelSelector: {}}", "topologyKey", "required field is missing"),
        ("{topologyKey: z, namespaces: [team-b]}", "namespaces", "muster has no namespaces"),
        (
            "{topologyKey: z, namespaceSelector: {matchLabels: {team: b}}}",
            "namespaceSelector",
            "muster has no namespaces",
        ),
        (
            "{topologyKey: z, labelSelector: {matchExpressions: [{key: n, operator: Gt, values: ['1']}]}}",
            "labelSelector.matchExpressions[0].operator",
            "expected one of In, NotIn, Exists, DoesNotExist",
        ),
        (
            "{topologyKey: z, labelSelector: {matchExpressions: [{key: n, operator: In}]}}",
            "labelSelector.matchExpressions[0].values",
            "must not be empty",
        ),
        (
            "{topologyKey: z, labelSelector: {matchLabels: [a]}}",
            "labelSelector.matchLabels",
            "expected a mapping",
        ),
    ],
)
def test_a_pod_affinity_term_muster_cannot_read_or_honour_names_its_field(term, field, message):
    err = refusal(
        pytorch(affinity=f"{{podAntiAffinity: {{requiredDuringSchedulingIgnoredDuringExecution: [{term}]}}}}")
    )
    assert err.path == f"{WORKER_SPEC}.{ANTI}[0].{field}"
    assert message in err.message


def test_an_empty_namespace_selector_asks_for_every_namespace_as_muster_does():
    text = pytorch(
        affinity="{podAntiAffinity: {requiredDuringSchedulingIgnoredDuringExecution: "
        "[{topologyKey: z, namespaceSelector: {}}]}}"
    )
    assert only(group_yaml(text)).pods[0].pod_anti_affinity == [ev.PodAffinityTerm(topology_key="z")]


def test_preferred_pod_affinity_and_anti_affinity_reach_the_pods_with_their_weights():
    term = "{podAffinityTerm: {labelSelector: {matchLabels: {app: db}}, topologyKey: zone}, weight: 30}"
    text = pytorch(
        affinity=f"{{podAffinity: {{preferredDuringSchedulingIgnoredDuringExecution: [{term}]}}, "
        f"podAntiAffinity: {{preferredDuringSchedulingIgnoredDuringExecution: [{term}]}}}}"
    )
    pod = only(group_yaml(text)).pods[0]
    db = ev.LabelSelector(
        match_expressions=(ev.LabelSelectorRequirement(key="app", operator="In", values=("db",)),)
    )
    want = [
        ev.WeightedPodAffinityTerm(
            weight=30, pod_affinity_term=ev.PodAffinityTerm(label_selector=db, topology_key="zone")
        )
    ]
    assert (pod.preferred_pod_affinity, pod.preferred_pod_anti_affinity) == (want, want)


@pytest.mark.parametrize("weight", ["0", "101", "'5'"])
def test_a_preferred_terms_weight_outside_1_to_100_names_the_field(weight):
    term = f"{{weight: {weight}, podAffinityTerm: {{topologyKey: z}}}}"
    err = refusal(
        pytorch(affinity=f"{{podAffinity: {{preferredDuringSchedulingIgnoredDuringExecution: [{term}]}}}}")
    )
    assert (
        err.path
        == f"{WORKER_SPEC}.affinity.podAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight"
    )


def test_a_container_host_port_is_refused_by_name():
    text = PYTORCH.replace("resources:", "ports: [{containerPort: 80, hostPort: 8080}], resources:")
    assert refusal(text).path == f"{WORKER_SPEC}.containers[0].ports[0].hostPort"


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


def test_spark_roles_and_argo_steps_carry_their_pod_labels():
    spark = only(
        group_yaml(
            """
apiVersion: sparkoperator.k8s.io/v1beta2
kind: SparkApplication
metadata: {name: pi}
spec:
  driver: {cores: 1, memory: 512m, labels: {role: driver}}
  executor: {cores: 1, instances: 2, memory: 512m, labels: {role: executor}}
"""
        )
    )
    operator = {
        "sparkoperator.k8s.io/app-name": "pi",
        "sparkoperator.k8s.io/launched-by-spark-operator": "true",
    }
    assert {role: p.labels for role, p in pods_by_role(spark).items()} == {
        "driver": {"role": "driver", "spark-role": "driver", **operator},
        "executor": {"role": "executor", "spark-role": "executor", **operator},
    }
    argo = ARGO.replace("  entrypoint: main\n", "  entrypoint: main\n  podMetadata: {labels: {wf: x}}\n")
    argo_labels = {
        "wf": "x",
        "workflows.argoproj.io/workflow": "wf",
        "workflows.argoproj.io/completed": "false",
    }
    assert all(g.pods[0].labels == argo_labels for g in group_yaml(argo))


@pytest.mark.parametrize("value", ["{}", "''", "0", "false"])
def test_tolerations_that_are_no_list_are_refused_even_when_empty(value):
    assert refusal(pytorch(tolerations=value)).path == f"{WORKER_SPEC}.tolerations"


def test_an_empty_toleration_list_and_no_affinity_constrain_nothing():
    group = only(group_yaml(pytorch(tolerations="[]")))
    assert group.pods[0] == only(group_yaml(PYTORCH)).pods[0]
    assert (group.pods[0].tolerations, group.pods[0].node_affinity, group.pods[0].pod_affinity) == (
        [],
        [],
        [],
    )
