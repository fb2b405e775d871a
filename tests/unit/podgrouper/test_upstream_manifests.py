"""Each upstream manifest in ../shared/data/manifests, grouped as podgrouper-rules.md says.

Every pod of a workload is assumed to go to KAI (the manifests' README).
"""

from __future__ import annotations

import pytest
from muster.events import SubGroup
from muster.grouping.errors import ManifestError
from muster.grouping.group import group_manifests

from .support import GI, MANIFESTS, MI, group_file, manifest_docs, only, pods_by_role, total_pods


def _tree(group):
    """(name, parent, min_available or min_subgroup) per sub-group, in order."""
    return [
        (s.name, s.parent, s.min_available if s.min_subgroup is None else s.min_subgroup)
        for s in group.subgroups
    ]


def _pods_per_leaf(group):
    return [(p.subgroup, p.count) for p in group.pods]


# -- the guard: a new manifest file needs a test here --------------------------

TESTED = {
    "argo-workflow/argo-workflows__dag-diamond.yaml",
    "argo-workflow/argo-workflows__k8s-jobs.yaml",
    "argo-workflow/argo-workflows__steps.yaml",
    "argo-workflow/jobset__workflow.yaml",
    "cronjob/kueue__sample-cronjob.yaml",
    "deployment/kueue__sample-deployment.yaml",
    "jaxjob/trainer__demo.yaml",
    "job/kai__batch-job.yaml",
    "job/kueue__sample-job.yaml",
    "jobset/jobset__mnist.yaml",
    "jobset/jobset__paralleljobs.yaml",
    "jobset/jobset__startup-driver-ready.yaml",
    "knative-service/knative-docs__helloworld-go-service.yaml",
    "leaderworkerset/lws__lws.yaml",
    "leaderworkerset/lws__vllm-gpu-lws.yaml",
    "mpijob/mpi-operator__pi.yaml",
    "mpijob/trainer__tensorflow-mnist.yaml",
    "notebook/kubeflow__v1beta1_notebook.yaml",
    "paddlejob/trainer__simple-cpu.yaml",
    "pod/kai__build-priority-pod.yaml",
    "pod/kai__gpu-pod.yaml",
    "podcliqueset/grove__single-node-aggregated.yaml",
    "pytorchjob/kai__pytorch-job.yaml",
    "pytorchjob/trainer__imagenet.yaml",
    "pytorchjob/trainer__simple.yaml",
    "raycluster/kuberay__ray-cluster.autoscaler.yaml",
    "raycluster/kuberay__ray-cluster.kai-scheduler.yaml",
    "raycluster/kuberay__ray-cluster.tpu-v4-multihost.yaml",
    "rayjob/kai__ray-job.yaml",
    "rayjob/kuberay__ray-job.sample.yaml",
    "rayjob/kuberay__ray-job.sidecar-mode.yaml",
    "rayservice/kuberay__ray-service.sample.yaml",
    "sparkapplication/spark-operator__spark-pi.yaml",
    "statefulset/kueue__sample-statefulset.yaml",
    "tfjob/trainer__simple.yaml",
    "tfjob/trainer__tf_job_mnist.yaml",
    "trainjob/trainer__01-multi-node.yaml",
    "trainjob/trainer__torch_distributed.yaml",
    "xgboostjob/trainer__xgboostjob.yaml",
}


def test_every_upstream_manifest_has_a_test_here():
    if not MANIFESTS.is_dir():
        pytest.skip(f"upstream manifests not found at {MANIFESTS.resolve()}")
    present = {str(p.relative_to(MANIFESTS)) for p in MANIFESTS.glob("*/*.yaml")}
    assert present == TESTED


# -- Argo Workflows: skip-top-owner, each step pod a bare pod ------------------


def test_argo_dag_diamond_makes_one_bare_pod_group_per_task():
    groups = group_file("argo-workflow/argo-workflows__dag-diamond.yaml", uid="w1")
    # Argo's tasks are A, B, C, D; a job name is lower case.
    assert [g.name.rsplit("-", 1)[1] for g in groups] == ["a", "b", "c", "d"]
    assert all(g.kind == "Workflow" and g.min_available == 1 and total_pods(g) == 1 for g in groups)
    assert {g.priority_class for g in groups} == {"train"} and all(g.preemptible for g in groups)


def test_argo_steps_make_one_group_per_step_pod():
    groups = group_file("argo-workflow/argo-workflows__steps.yaml", uid="w1")
    assert [g.name.split("-", 2)[2] for g in groups] == ["hello1", "hello2a", "hello2b"]
    assert all(g.min_available == 1 for g in groups)


def test_argo_owned_job_is_grouped_as_one_job_group_beside_the_executor_pod():
    groups = group_file("argo-workflow/argo-workflows__k8s-jobs.yaml", uid="w1")
    executor, job = groups
    assert executor.kind == "Workflow" and executor.pods[0].role == "executor"
    # parallelism 3: one group of min 1 for the three pods since KAI v0.15 (one per pod before)
    assert (job.kind, job.min_available, job.pods[0].count) == ("Job", 1, 3)
    assert job.name.startswith("rand-num-")


def test_argo_created_jobset_without_owner_reference_is_its_own_top_owner():
    groups = group_file("argo-workflow/jobset__workflow.yaml", uid="w1")
    executor, jobset = groups
    assert executor.kind == "Workflow"
    # No startupPolicy: AnyOrder since KAI v0.16, one group needing both replicatedJobs.
    assert (jobset.name, jobset.kind, jobset.min_subgroup, jobset.min_available) == (
        "paralleljobs",
        "JobSet",
        2,
        5,
    )
    assert [s.name for s in jobset.subgroups] == [
        "workers",
        "workers-replica-0",
        "driver",
        "driver-replica-0",
    ]


# -- core kinds ---------------------------------------------------------------


def test_cronjob_run_keeps_its_parallel_pods_in_one_group_of_min_one():
    group = only(group_file("cronjob/kueue__sample-cronjob.yaml"))
    assert (group.name, group.kind, group.min_available, total_pods(group)) == (
        "sample-cronjob",
        "CronJob",
        1,
        3,
    )
    assert group.pods[0].resources.cpu == 1000 and group.pods[0].resources.memory == 200 * MI
    assert group.queue == "default-queue"  # kueue's queue label is ignored


def test_deployment_gives_each_pod_its_own_inference_group():
    groups = group_file("deployment/kueue__sample-deployment.yaml")
    assert [g.name for g in groups] == ["nginx-deployment-0", "nginx-deployment-1", "nginx-deployment-2"]
    for g in groups:
        assert (g.priority_class, g.priority, g.preemptible, g.min_available) == ("inference", 125, False, 1)
        assert g.pods[0].resources.cpu == 100


def test_kai_batch_job_is_one_group_of_min_one_on_the_labelled_queue():
    # KAI v0.15: the Job's two parallel pods share pg-<job>-<uid> (one group per pod before).
    [group] = group_file("job/kai__batch-job.yaml")
    assert (group.name, group.queue, group.pods[0].count, group.pods[0].resources.gpu) == (
        "batch-job",
        "default-queue",
        2,
        1.0,
    )
    assert (group.min_available, group.priority_class) == (1, "train")


def test_kueue_job_with_generate_name_is_one_group_of_three_pods():
    [group] = group_file("job/kueue__sample-job.yaml", uid="s1")
    assert group.name.startswith("sample-job-") and group.pods[0].count == 3
    assert (group.kind, group.min_available) == ("Job", 1)


def test_bare_pod_with_build_priority_label_is_not_preemptible():
    group = only(group_file("pod/kai__build-priority-pod.yaml"))
    assert (group.name, group.kind, group.priority_class, group.priority) == (
        "build-pod",
        "Pod",
        "build",
        100,
    )
    assert group.preemptible is False and group.queue == "default-queue"


def test_bare_gpu_pod_is_a_train_group_of_one():
    group = only(group_file("pod/kai__gpu-pod.yaml"))
    assert (group.min_available, group.priority_class, group.preemptible) == (1, "train", True)
    assert group.pods[0].resources.gpu == 1.0


def test_statefulset_shares_one_group_of_min_one():
    group = only(group_file("statefulset/kueue__sample-statefulset.yaml"))
    assert (group.name, group.kind, group.min_available, total_pods(group)) == (
        "nginx-statefulset",
        "StatefulSet",
        1,
        3,
    )
    assert group.priority_class == "train" and group.preemptible


# -- Kubeflow training operator -----------------------------------------------


def test_jaxjob_gangs_every_worker():
    group = only(group_file("jaxjob/trainer__demo.yaml"))
    assert (group.kind, group.min_available, total_pods(group)) == ("JAXJob", 2, 2)
    assert group.subgroups == []


def test_mpijob_v2beta1_gangs_launcher_and_workers():
    group = only(group_file("mpijob/mpi-operator__pi.yaml"))
    pods = pods_by_role(group)
    assert group.min_available == 3 and pods["launcher"].count == 1 and pods["worker"].count == 2
    assert pods["worker"].resources.cpu == 1000 and pods["worker"].resources.memory == 1 * GI  # limits only


def test_mpijob_v1_gangs_launcher_and_workers():
    group = only(group_file("mpijob/trainer__tensorflow-mnist.yaml"))
    assert group.min_available == 3
    assert pods_by_role(group)["worker"].resources.memory == 4 * GI


def test_paddlejob_falls_to_the_default_rule_of_min_one():
    group = only(group_file("paddlejob/trainer__simple-cpu.yaml"))
    assert (group.kind, group.min_available, total_pods(group)) == ("PaddleJob", 1, 2)


def test_pytorchjob_has_master_and_worker_subgroups():
    group = only(group_file("pytorchjob/kai__pytorch-job.yaml"))
    assert group.min_available == 3
    assert group.subgroups == [
        SubGroup(name="master", min_available=1),
        SubGroup(name="worker", min_available=2),
    ]
    assert {p.role: p.subgroup for p in group.pods} == {"master": "master", "worker": "worker"}


def test_kai_pytorchjob_with_a_segment_size_groups_its_workers_under_a_worker_set():
    (doc,) = manifest_docs("pytorchjob/kai__pytorch-job.yaml")
    worker = doc["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]
    worker["metadata"] = {"annotations": {"kai.scheduler/segment-size": "1"}}
    group = only(group_manifests([doc]))
    assert group.subgroups == [
        SubGroup(name="master", min_available=1),
        SubGroup(name="worker", min_subgroup=2),
        SubGroup(name="worker-0", parent="worker", min_available=1),
        SubGroup(name="worker-1", parent="worker", min_available=1),
    ]
    assert [(p.subgroup, p.count) for p in group.pods] == [("master", 1), ("worker-0", 1), ("worker-1", 1)]


def test_elastic_pytorchjob_min_replicas_is_the_whole_gang():
    group = only(group_file("pytorchjob/trainer__imagenet.yaml"))
    assert group.min_available == 1 and total_pods(group) == 2
    assert group.subgroups == [SubGroup(name="worker", min_available=1)]
    assert group.pods[0].resources.cpu == 4000


def test_simple_pytorchjob_gangs_master_and_worker():
    group = only(group_file("pytorchjob/trainer__simple.yaml"))
    assert group.min_available == 2
    assert [s.min_available for s in group.subgroups] == [1, 1]


def test_tfjob_gangs_every_worker():
    group = only(group_file("tfjob/trainer__simple.yaml"))
    assert (group.kind, group.min_available) == ("TFJob", 2)


def test_tfjob_sums_chief_ps_and_workers():
    group = only(group_file("tfjob/trainer__tf_job_mnist.yaml"))
    assert group.min_available == 4
    assert [(p.role, p.count) for p in group.pods] == [("chief", 1), ("ps", 1), ("worker", 2)]


def test_xgboostjob_gangs_master_and_workers():
    group = only(group_file("xgboostjob/trainer__xgboostjob.yaml"))
    assert (group.kind, group.min_available, group.subgroups) == ("XGBoostJob", 3, [])


def test_notebook_is_a_build_group_of_one():
    group = only(group_file("notebook/kubeflow__v1beta1_notebook.yaml"))
    assert (group.kind, group.priority_class, group.priority, group.preemptible) == (
        "Notebook",
        "build",
        100,
        False,
    )
    assert group.min_available == 1


def test_trainjob_is_grouped_as_the_jobset_its_runtime_shapes():
    docs = manifest_docs("trainjob/trainer__01-multi-node.yaml") + manifest_docs(
        "trainjob/trainer__torch_distributed.yaml"
    )
    from muster.grouping.group import group_manifests

    group = only(group_manifests(docs))
    assert (group.name, group.kind, group.min_subgroup, group.min_available) == (
        "multi-node-example",
        "TrainJob",
        1,
        3,
    )
    # the runtime's one replicatedJob, its trainer, runs numNodes pods in its one replica
    assert _tree(group) == [("node", None, 1), ("node-replica-0", "node", 3)]
    assert _pods_per_leaf(group) == [("node-replica-0", 3)]


def test_training_runtime_alone_runs_no_pod():
    with pytest.raises(ManifestError, match="no document in the submission runs any pod"):
        group_file("trainjob/trainer__torch_distributed.yaml")


# -- Ray ------------------------------------------------------------------------


def test_raycluster_with_zero_worker_replicas_gangs_only_the_head():
    group = only(group_file("raycluster/kuberay__ray-cluster.autoscaler.yaml"))
    assert group.min_available == 1 and group.subgroups == [SubGroup(name="headgroup", min_available=1)]
    assert total_pods(group) == 1


def test_raycluster_sample_takes_the_queue_label_and_ignores_its_queue_documents():
    group = only(group_file("raycluster/kuberay__ray-cluster.kai-scheduler.yaml"))
    assert (group.queue, group.min_available) == ("team-a", 3)
    assert group.subgroups[1] == SubGroup(name="worker", min_available=2)


def test_raycluster_multihost_group_counts_hosts():
    group = only(group_file("raycluster/kuberay__ray-cluster.tpu-v4-multihost.yaml"))
    tpu = pods_by_role(group)["tpu-group"]
    assert group.min_available == 3 and tpu.count == 2
    assert tpu.resources.extended == {"google.com/tpu": 4} and tpu.resources.memory == 40 * 10**9
    assert tpu.node_selector["cloud.google.com/gke-tpu-topology"] == "2x2x2"


def test_kai_rayjob_counts_min_replicas_and_adds_an_ungated_submitter():
    group = only(group_file("rayjob/kai__ray-job.yaml"))
    pods = pods_by_role(group)
    assert group.min_available == 2 and pods["gpu-workers"].count == 2
    assert pods["submitter"].subgroup == "" and pods["submitter"].resources.cpu == 500
    assert group.queue == "default-queue"


def test_rayjob_sample_in_k8s_job_mode_has_a_submitter_pod():
    group = only(group_file("rayjob/kuberay__ray-job.sample.yaml"))
    assert group.min_available == 2 and "submitter" in pods_by_role(group)


def test_rayjob_in_sidecar_mode_has_no_submitter_pod():
    group = only(group_file("rayjob/kuberay__ray-job.sidecar-mode.yaml"))
    assert set(pods_by_role(group)) == {"head", "small-group"} and group.min_available == 2


def test_rayservice_is_train_and_preemptible():
    group = only(group_file("rayservice/kuberay__ray-service.sample.yaml"))
    assert (group.kind, group.priority_class, group.preemptible, group.min_available) == (
        "RayService",
        "train",
        True,
        2,
    )


# -- JobSet, LWS, Knative, Spark, Grove ---------------------------------------


def test_jobset_mnist_is_one_group_whose_only_replica_needs_its_four_pods():
    group = only(group_file("jobset/jobset__mnist.yaml"))
    assert (group.name, group.min_subgroup) == ("pytorch", 1)
    assert _tree(group) == [("workers", None, 1), ("workers-replica-0", "workers", 4)]
    assert _pods_per_leaf(group) == [("workers-replica-0", 4)]


def test_jobset_without_startup_policy_is_any_order_and_needs_every_replicated_job():
    # podgrouper-rules.md §4.9 / §6 item 1: one PodGroup, root minSubGroup 2, 5 pods in the gang.
    group = only(group_file("jobset/jobset__paralleljobs.yaml"))
    assert (group.name, group.kind, group.min_subgroup, group.min_available) == (
        "paralleljobs",
        "JobSet",
        2,
        5,
    )
    assert _tree(group) == [
        ("workers", None, 1),
        ("workers-replica-0", "workers", 4),
        ("driver", None, 1),
        ("driver-replica-0", "driver", 1),
    ]
    assert _pods_per_leaf(group) == [("workers-replica-0", 4), ("driver-replica-0", 1)]


def test_jobset_in_order_is_one_group_needing_one_replicated_job():
    group = only(group_file("jobset/jobset__startup-driver-ready.yaml"))
    assert (group.name, group.min_subgroup, group.min_available) == ("startup-driver-ready", 1, 1)
    assert _tree(group) == [
        ("driver", None, 1),
        ("driver-replica-0", "driver", 1),
        ("workers", None, 1),
        ("workers-replica-0", "workers", 4),
    ]
    assert _pods_per_leaf(group) == [("driver-replica-0", 1), ("workers-replica-0", 4)]


def test_knative_service_gangs_its_revision_at_min_scale_one_as_inference():
    group = only(group_file("knative-service/knative-docs__helloworld-go-service.yaml"))
    assert (group.name, group.kind, group.min_available) == ("helloworld-go-00001", "Service", 1)
    assert (group.priority_class, group.preemptible) == ("inference", False)


def test_lws_makes_one_gang_per_replica_group_of_its_size():
    groups = group_file("leaderworkerset/lws__lws.yaml")
    assert [g.name for g in groups] == [f"leaderworkerset-sample-group-{n}" for n in range(3)]
    group = groups[0]
    assert group.min_available == 4
    assert group.subgroups == [
        SubGroup(name="leader", min_available=1),
        SubGroup(name="workers", min_available=3),
    ]
    assert group.pods[0].resources.cpu == 50  # the request, not the limit


def test_vllm_lws_is_preemptible_train_with_leader_and_worker_templates():
    groups = group_file("leaderworkerset/lws__vllm-gpu-lws.yaml")
    assert len(groups) == 2 and all(g.min_available == 2 and g.preemptible for g in groups)
    leader = pods_by_role(groups[0])["leader"]
    assert (
        leader.resources.gpu == 8.0
        and leader.resources.cpu == 125_000
        and leader.resources.memory == 1124 * GI
    )


def test_spark_operator_application_is_one_group_of_min_one():
    group = only(group_file("sparkapplication/spark-operator__spark-pi.yaml"))
    pods = pods_by_role(group)
    assert (group.kind, group.min_available, total_pods(group)) == ("SparkApplication", 1, 2)
    assert pods["driver"].resources.memory == (512 + 384) * MI and pods["driver"].resources.cpu == 1000


def test_grove_podcliqueset_gangs_each_clique_at_its_replicas():
    group = only(group_file("podcliqueset/grove__single-node-aggregated.yaml"))
    assert (group.name, group.min_available) == ("single-node-aggregated-0", 2)
    assert group.subgroups == [SubGroup(name="single-node-aggregated-0-model-worker", min_available=2)]
    assert group.pods[0].resources.memory == 32 * MI and group.pods[0].resources.cpu == 10
