"""A pod carries the labels its controller gives every pod of its PodSpec entry (job name, replica type,
operator), under its template's own; a pod (anti-)affinity term selecting a label that differs from pod
to pod is refused by name (kai-semantics.md §16)."""

from __future__ import annotations

from typing import Any

import pytest
from muster.grouping.errors import ManifestError
from muster.grouping.group import group_manifests

from .support import group_yaml, hosts, manifest_docs, only, simulated

KF = "training.kubeflow.org/"
JS = "jobset.sigs.k8s.io/"

# (manifest, group, pod role, labels its controller gives those pods)
ARRIVING = [
    (
        "pytorchjob/kai__pytorch-job.yaml",
        "pytorch-dist-mnist-nccl",
        "master",
        {
            KF + "job-name": "pytorch-dist-mnist-nccl",
            KF + "operator-name": "pytorchjob-controller",
            KF + "replica-type": "master",
            KF + "job-role": "master",
        },
    ),
    (
        "pytorchjob/kai__pytorch-job.yaml",
        "pytorch-dist-mnist-nccl",
        "worker",
        {
            KF + "job-name": "pytorch-dist-mnist-nccl",
            KF + "operator-name": "pytorchjob-controller",
            KF + "replica-type": "worker",
        },
    ),
    (
        "tfjob/trainer__simple.yaml",
        "tfjob-simple",
        "worker",
        {
            KF + "job-name": "tfjob-simple",
            KF + "operator-name": "tfjob-controller",
            KF + "replica-type": "worker",
        },
    ),
    (
        "xgboostjob/trainer__xgboostjob.yaml",
        "xgboost-dist-iris-test-train",
        "master",
        {
            KF + "operator-name": "xgboostjob-controller",
            KF + "replica-type": "master",
            KF + "job-role": "master",
        },
    ),
    (
        "jaxjob/trainer__demo.yaml",
        "jaxjob-simple",
        "worker",
        {
            KF + "job-name": "jaxjob-simple",
            KF + "operator-name": "jaxjob-controller",
            KF + "replica-type": "worker",
        },
    ),
    (
        "paddlejob/trainer__simple-cpu.yaml",
        "paddle-simple-cpu",
        "worker",
        {KF + "job-name": "paddle-simple-cpu", KF + "operator-name": "paddlejob-controller"},
    ),
    (
        "mpijob/trainer__tensorflow-mnist.yaml",
        "tensorflow-mnist",
        "launcher",
        {
            KF + "operator-name": "mpijob-controller",
            KF + "replica-type": "launcher",
            KF + "job-role": "master",
        },
    ),
    (
        "mpijob/mpi-operator__pi.yaml",
        "pi",
        "worker",
        {KF + "operator-name": "mpi-operator", KF + "job-name": "pi", KF + "job-role": "worker"},
    ),
    (
        "job/kai__batch-job.yaml",
        "batch-job",
        "pod",
        {"batch.kubernetes.io/job-name": "batch-job", "job-name": "batch-job"},
    ),
    (
        "jobset/jobset__paralleljobs.yaml",
        "paralleljobs",
        "driver",
        {
            JS + "jobset-name": "paralleljobs",
            JS + "replicatedjob-name": "driver",
            JS + "replicatedjob-replicas": "1",
            JS + "job-index": "0",
            JS + "job-global-index": "1",
            JS + "global-replicas": "2",
            "job-name": "paralleljobs-driver-0",
            "batch.kubernetes.io/job-name": "paralleljobs-driver-0",
        },
    ),
    (
        "trainjob/trainer__01-multi-node.yaml",
        "multi-node-example",
        "node",
        {JS + "jobset-name": "multi-node-example", JS + "replicatedjob-name": "node"},
    ),
    (
        "raycluster/kuberay__ray-cluster.autoscaler.yaml",
        "raycluster-autoscaler",
        "head",
        {
            "ray.io/cluster": "raycluster-autoscaler",
            "ray.io/node-type": "head",
            "ray.io/group": "headgroup",
            "ray.io/is-ray-node": "yes",
            "ray.io/identifier": "raycluster-autoscaler-head",
            "app.kubernetes.io/name": "kuberay",
            "app.kubernetes.io/created-by": "kuberay-operator",
        },
    ),
    (
        "rayjob/kuberay__ray-job.sample.yaml",
        "rayjob-sample",
        "small-group",
        {"ray.io/node-type": "worker", "ray.io/group": "small-group", "ray.io/is-ray-node": "yes"},
    ),
    (
        "notebook/kubeflow__v1beta1_notebook.yaml",
        "notebook-sample-v1beta1",
        "notebook",
        {"statefulset": "notebook-sample-v1beta1", "notebook-name": "notebook-sample-v1beta1"},
    ),
    (
        "knative-service/knative-docs__helloworld-go-service.yaml",
        "helloworld-go-00001",
        "pod",
        {
            "serving.knative.dev/service": "helloworld-go",
            "serving.knative.dev/configuration": "helloworld-go",
            "serving.knative.dev/revision": "helloworld-go-00001",
            "app": "helloworld-go-00001",
        },
    ),
    (
        "sparkapplication/spark-operator__spark-pi.yaml",
        "spark-pi",
        "executor",
        {
            "sparkoperator.k8s.io/app-name": "spark-pi",
            "sparkoperator.k8s.io/launched-by-spark-operator": "true",
            "spark-role": "executor",
        },
    ),
    (
        "argo-workflow/argo-workflows__steps.yaml",
        "steps-e9368-hello1",
        "pod",
        {"workflows.argoproj.io/workflow": "steps-e9368", "workflows.argoproj.io/completed": "false"},
    ),
    (
        "leaderworkerset/lws__lws.yaml",
        "leaderworkerset-sample-group-0",
        "worker",
        {"leaderworkerset.sigs.k8s.io/name": "leaderworkerset-sample"},
    ),
]


def pod_of(docs: list[dict[str, Any]], group: str, role: str):
    """The first PodSpec entry of ``role`` in ``group`` (a TFJob's worker 0 may have one of its own)."""
    return next(p for g in group_manifests(docs) if g.name == group for p in g.pods if p.role == role)


@pytest.mark.parametrize(("manifest", "group", "role", "labels"), ARRIVING, ids=lambda v: str(v)[:40])
def test_a_pod_carries_the_labels_its_controller_gives_it(manifest, group, role, labels):
    pod = pod_of(manifest_docs(manifest), group, role)
    assert {key: pod.labels.get(key) for key in labels} == labels


def set_template_labels(node: Any, key: str, value: str) -> None:
    """Set ``key`` among the labels of every pod template inside a manifest: a Kubernetes pod template
    (``{metadata, spec: {containers}}``), an Argo template (``{metadata, container}``), a Spark role."""
    if isinstance(node, dict):
        if isinstance(node.get("spec"), dict) and "containers" in node["spec"] or "container" in node:
            node.setdefault("metadata", {}).setdefault("labels", {})[key] = value
        elif "cores" in node or "instances" in node:
            node.setdefault("labels", {})[key] = value
        for child in node.values():
            set_template_labels(child, key, value)
    elif isinstance(node, list):
        for child in node:
            set_template_labels(child, key, value)


# A TrainJob's pod template is its runtime's, not in the manifest: its JobSet's rule is the JobSet's.
OWN_TEMPLATES = [case for case in ARRIVING if not case[0].startswith("trainjob/")]


@pytest.mark.parametrize(("manifest", "group", "role", "labels"), OWN_TEMPLATES, ids=lambda v: str(v)[:40])
def test_a_label_the_template_sets_wins_over_the_controllers(manifest, group, role, labels):
    """One of the controller's keys set in the template keeps the template's value; the others arrive."""
    docs = manifest_docs(manifest)
    key = sorted(labels)[0]
    set_template_labels(docs, key, "the-templates-own")
    pod = pod_of(docs, group, role)
    assert {k: pod.labels.get(k) for k in labels} == {**labels, key: "the-templates-own"}


def test_a_rayjobs_pods_do_not_name_the_cluster_kuberay_names_for_it():
    pod = pod_of(manifest_docs("rayjob/kuberay__ray-job.sample.yaml"), "rayjob-sample", "head")
    assert "ray.io/cluster" not in pod.labels and pod.labels["ray.io/node-type"] == "head"


def test_each_replica_of_a_replicated_job_carries_its_own_job_index():
    text = """
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {name: js}
spec:
  replicatedJobs:
    - name: w
      replicas: 2
      template: {spec: {template: {spec: {containers: [{name: c, image: i}]}}}}
"""
    pods = only(group_yaml(text)).pods
    assert [(p.labels[JS + "job-index"], p.labels["job-name"]) for p in pods] == [
        ("0", "js-w-0"),
        ("1", "js-w-1"),
    ]


PYTORCH = """
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: train, labels: {kai.scheduler/queue: team}}
spec:
  pytorchReplicaSpecs:
    Worker:
      replicas: 3
      template:
        spec:
          containers: [{name: c, resources: {limits: {nvidia.com/gpu: 1}}}]
          affinity:
            podAntiAffinity:
              requiredDuringSchedulingIgnoredDuringExecution:
                - labelSelector: {matchLabels: {training.kubeflow.org/job-name: train}}
                  topologyKey: kubernetes.io/hostname
"""


def test_a_pytorchjob_anti_affine_to_its_own_job_name_gets_one_worker_per_node():
    simulation = simulated(
        hosts("spread", "team", gpu=8),
        group_yaml(PYTORCH),
    )
    nodes = sorted(pod.node for pod in simulation.fleet.bound() if pod.job == "train")
    assert nodes == ["node-0", "node-1", "node-2"]


ANTI = "affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution"
PREFERRED = "affinity.podAffinity.preferredDuringSchedulingIgnoredDuringExecution"
WORKER_SPEC = "spec.pytorchReplicaSpecs.Worker.template.spec"


@pytest.mark.parametrize(
    ("affinity", "field"),
    [
        (
            "{podAntiAffinity: {requiredDuringSchedulingIgnoredDuringExecution: [{topologyKey: z, "
            "labelSelector: {matchLabels: {training.kubeflow.org/replica-index: '0'}}}]}}",
            f"{ANTI}[0].labelSelector.matchLabels.training.kubeflow.org/replica-index",
        ),
        (
            "{podAntiAffinity: {requiredDuringSchedulingIgnoredDuringExecution: [{topologyKey: z, "
            "labelSelector: {matchExpressions: [{key: app, operator: Exists}, "
            "{key: pod-template-hash, operator: Exists}]}}]}}",
            f"{ANTI}[0].labelSelector.matchExpressions[1].key",
        ),
        (
            "{podAffinity: {preferredDuringSchedulingIgnoredDuringExecution: [{weight: 5, podAffinityTerm: "
            "{topologyKey: z, labelSelector: {matchLabels: {batch.kubernetes.io/job-completion-index: '1'}}}}]}}",
            f"{PREFERRED}[0].podAffinityTerm.labelSelector.matchLabels.batch.kubernetes.io/job-completion-index",
        ),
    ],
)
def test_a_term_selecting_a_label_each_pod_has_its_own_value_of_is_refused_naming_it(affinity, field):
    text = PYTORCH.split("          affinity:")[0] + f"          affinity: {affinity}\n"
    with pytest.raises(ManifestError) as err:
        group_yaml(text)
    assert err.value.path == f"{WORKER_SPEC}.{field}"
    assert "differs from pod to pod" in err.value.message


def _tfjob(replica_specs: str) -> str:
    return f"""
apiVersion: kubeflow.org/v1
kind: TFJob
metadata: {{name: tf}}
spec:
  tfReplicaSpecs:
    {replica_specs}
"""


TF_POD = "template: {spec: {containers: [{name: c}]}}"


def test_a_tfjob_without_chief_or_master_labels_its_worker_zero_alone_as_master():
    # training-operator tfjob_controller.go IsMasterRole: worker index 0 when there is no Chief or Master
    pods = only(group_yaml(_tfjob(f"Worker: {{replicas: 3, {TF_POD}}}"))).pods
    assert [(p.role, p.count, p.labels.get(KF + "job-role")) for p in pods] == [
        ("worker", 1, "master"),
        ("worker", 2, None),
    ]


def test_a_tfjob_with_a_chief_labels_the_chief_master_and_keeps_its_workers_together():
    text = _tfjob(f"Chief: {{replicas: 1, {TF_POD}}}\n    Worker: {{replicas: 3, {TF_POD}}}")
    pods = only(group_yaml(text)).pods
    assert [(p.role, p.count, p.labels.get(KF + "job-role")) for p in pods] == [
        ("chief", 1, "master"),
        ("worker", 3, None),
    ]


def test_a_tfjob_worker_zeros_own_job_role_label_wins_over_the_operators():
    text = _tfjob(
        "Worker: {replicas: 2, template: {metadata: {labels: {training.kubeflow.org/job-role: mine}}, "
        "spec: {containers: [{name: c}]}}}"
    )
    pods = only(group_yaml(text)).pods
    assert [p.labels.get(KF + "job-role") for p in pods] == ["mine", "mine"]


def test_tfjob_workers_affine_to_the_master_role_join_worker_zero():
    # With no Chief or Master, worker 0 is the pod labelled job-role: master: the others follow it.
    term = (
        "{labelSelector: {matchLabels: {training.kubeflow.org/job-role: master}}, "
        "topologyKey: kubernetes.io/hostname}"
    )
    worker = (
        "template: {spec: {containers: [{name: c, resources: {limits: {nvidia.com/gpu: 1}}}], "
        f"affinity: {{podAffinity: {{requiredDuringSchedulingIgnoredDuringExecution: [{term}]}}}}}}}}"
    )
    simulation = simulated(
        hosts("follow", "default-queue"),
        group_yaml(_tfjob(f"Worker: {{replicas: 3, {worker}}}")),
    )
    nodes = [pod.node for pod in simulation.fleet.bound() if pod.job == "tf"]
    assert len(nodes) == 3 and len(set(nodes)) == 1
