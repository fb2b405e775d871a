"""Grouping rules per kind, on small manifests written for the rule at hand."""

from __future__ import annotations

import pytest
from muster.events import SubGroup, Topology
from muster.grouping.errors import ManifestError

from .support import group_yaml, only, pods_by_role, total_pods

POD_SPEC = "spec: {containers: [{name: c, resources: {requests: {cpu: '1'}}}]}"


def test_bare_replicaset_shares_one_group_of_min_one():
    group = only(
        group_yaml(f"""
apiVersion: apps/v1
kind: ReplicaSet
metadata: {{name: rs}}
spec: {{replicas: 4, template: {{{POD_SPEC}}}}}
""")
    )
    assert (group.kind, group.min_available, total_pods(group), group.priority_class) == (
        "ReplicaSet",
        1,
        4,
        "train",
    )


def test_unknown_kind_is_one_group_of_min_one_and_says_default_rule():
    group = only(
        group_yaml(f"""
apiVersion: example.com/v1
kind: Trainer
metadata: {{name: t}}
spec:
  roles:
    - name: coordinator
      template: {{{POD_SPEC}}}
    - name: shard
      replicas: 3
      template: {{{POD_SPEC}}}
""")
    )
    assert group.kind == "Trainer (default rule)"
    assert [(p.role, p.count) for p in group.pods] == [("coordinator", 1), ("shard", 3)]
    assert group.min_available == 1


def job_yaml(spec: str, annotations: str = "{}") -> str:
    return (
        f"apiVersion: batch/v1\nkind: Job\nmetadata: {{name: j, annotations: {annotations}}}\n"
        f"spec: {{{spec}, template: {{{POD_SPEC}}}}}"
    )


def test_job_runs_no_more_pods_than_completions():
    assert total_pods(only(group_yaml(job_yaml("parallelism: 5, completions: 2")))) == 2


def test_parallel_job_pods_share_one_group_of_min_one_named_after_the_job():
    # KAI v0.15 (job_grouper.go): one PodGroup per Job; before, one per pod (j-0, j-1, j-2).
    group = only(group_yaml(job_yaml("parallelism: 3")))
    assert (group.name, group.kind, group.min_available, total_pods(group)) == ("j", "Job", 1, 3)


def test_batch_min_member_annotation_makes_the_job_a_gang():
    # KAI: plugins/job/job_grouper_test.go TestGetPodGroupMetadata_MinMemberOverride
    group = only(group_yaml(job_yaml("parallelism: 4", "{kai.scheduler/batch-min-member: '3'}")))
    assert (group.min_available, total_pods(group)) == (3, 4)


def test_batch_min_member_zero_makes_a_job_without_gang():
    assert (
        only(group_yaml(job_yaml("parallelism: 2", "{kai.scheduler/batch-min-member: '0'}"))).min_available
        == 0
    )


@pytest.mark.parametrize(
    ("value", "error"),
    [("two", "expected an integer"), ("1.5", "expected an integer"), ("-1", "must not be negative")],
)
def test_batch_min_member_that_is_not_a_whole_number_is_refused_naming_the_annotation(value, error):
    # KAI's calcMinMember errors on a non-integer (no PodGroup); a negative one the API refuses.
    with pytest.raises(ManifestError) as caught:
        group_yaml(job_yaml("parallelism: 2", f"{{kai.scheduler/batch-min-member: '{value}'}}"))
    assert caught.value.path == "metadata.annotations.kai.scheduler/batch-min-member"
    assert error in str(caught.value)


def test_batch_min_member_above_the_pods_the_job_runs_at_once_is_refused():
    with pytest.raises(ManifestError) as caught:
        group_yaml(job_yaml("parallelism: 4, completions: 2", "{kai.scheduler/batch-min-member: '3'}"))
    assert caught.value.path == "metadata.annotations.kai.scheduler/batch-min-member"
    assert "runs 2 at once" in str(caught.value)


def test_batch_min_member_on_the_pod_template_is_not_read():
    text = job_yaml("parallelism: 2").replace(
        "template: {spec:", "template: {metadata: {annotations: {kai.scheduler/batch-min-member: '2'}}, spec:"
    )
    assert only(group_yaml(text)).min_available == 1


def test_cronjob_reads_queue_from_its_job_template_not_itself():
    group = only(
        group_yaml(f"""
apiVersion: batch/v1
kind: CronJob
metadata: {{name: c, labels: {{kai.scheduler/queue: ignored}}}}
spec:
  schedule: "* * * * *"
  jobTemplate:
    metadata: {{labels: {{kai.scheduler/queue: nightly}}}}
    spec: {{template: {{{POD_SPEC}}}}}
""")
    )
    assert group.queue == "nightly"


def test_deployment_priority_label_overrides_inference():
    groups = group_yaml(f"""
apiVersion: apps/v1
kind: Deployment
metadata: {{name: d, labels: {{priorityClassName: train}}}}
spec: {{replicas: 1, template: {{{POD_SPEC}}}}}
""")
    assert (only(groups).priority_class, only(groups).preemptible) == ("train", True)


def test_mpijob_waiting_for_workers_leaves_the_launcher_out_of_the_gang():
    group = only(
        group_yaml(f"""
apiVersion: kubeflow.org/v2beta1
kind: MPIJob
metadata: {{name: m}}
spec:
  launcherCreationPolicy: WaitForWorkersReady
  mpiReplicaSpecs:
    Launcher: {{replicas: 1, template: {{{POD_SPEC}}}}}
    Worker: {{replicas: 4, template: {{{POD_SPEC}}}}}
""")
    )
    assert (group.min_available, total_pods(group)) == (4, 5)


def test_mpijob_without_a_worker_spec_is_rejected():
    with pytest.raises(ManifestError) as err:
        group_yaml(f"""
apiVersion: kubeflow.org/v1
kind: MPIJob
metadata: {{name: m}}
spec: {{mpiReplicaSpecs: {{Launcher: {{replicas: 1, template: {{{POD_SPEC}}}}}}}}}
""")
    assert err.value.path == "spec.mpiReplicaSpecs.Worker"


def test_pytorch_scheduling_policy_beats_elastic_min_replicas():
    group = only(
        group_yaml(f"""
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {{name: p}}
spec:
  elasticPolicy: {{minReplicas: 2}}
  runPolicy: {{schedulingPolicy: {{minAvailable: 3}}}}
  pytorchReplicaSpecs:
    Master: {{replicas: 1, template: {{{POD_SPEC}}}}}
    Worker: {{replicas: 4, template: {{{POD_SPEC}}}}}
""")
    )
    assert group.min_available == 3
    assert group.subgroups == [
        SubGroup(name="master", min_available=1),
        SubGroup(name="worker", min_available=2),
    ]


def _pytorch_segmented(workers: int, size: int, extra: str = "") -> str:
    return f"""
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {{name: p}}
spec:
  {extra}
  pytorchReplicaSpecs:
    Worker:
      replicas: {workers}
      template:
        metadata: {{annotations: {{kai.scheduler/segment-size: "{size}"}}}}
        spec: {{containers: [{{name: c}}]}}
"""


def _tree(group) -> list[tuple]:
    return [(s.name, s.parent, s.min_subgroup, s.min_available) for s in group.subgroups]


def test_pytorch_segment_size_makes_worker_a_set_of_all_its_segments():
    # podgrouper-rules.md §4.6/§4.17: `worker` carries minSubGroup = #segments and no minMember
    group = only(group_yaml(_pytorch_segmented(5, 2)))
    assert _tree(group) == [
        ("worker", None, 3, 0),
        ("worker-0", "worker", None, 2),
        ("worker-1", "worker", None, 2),
        ("worker-2", "worker", None, 1),
    ]
    assert [(p.subgroup, p.count) for p in group.pods] == [("worker-0", 2), ("worker-1", 2), ("worker-2", 1)]


def test_pytorch_segments_beyond_the_elastic_minimum_are_optional():
    # minReplicas 3 with segments of 2: segments 0 and 1 cover the minimum (rounded up), 2 and 3 need nothing
    group = only(group_yaml(_pytorch_segmented(8, 2, "elasticPolicy: {minReplicas: 3}")))
    assert [(s.name, s.min_available) for s in group.subgroups[1:]] == [
        ("worker-0", 2),
        ("worker-1", 2),
        ("worker-2", 0),
        ("worker-3", 0),
    ]


def _pytorch_segment_topology(worker_notes: str, job_notes: str = "{}") -> str:
    return f"""
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {{name: p, annotations: {job_notes}}}
spec:
  pytorchReplicaSpecs:
    Master: {{replicas: 1, template: {{spec: {{containers: [{{name: c}}]}}}}}}
    Worker:
      replicas: 4
      template:
        metadata: {{annotations: {{kai.scheduler/segment-size: "2", {worker_notes}}}}}
        spec: {{containers: [{{name: c}}]}}
"""


def test_pytorch_each_segment_takes_the_segment_topology_and_master_and_worker_none():
    # KAI: pytorch_grouper_test.go TestGetPodGroupMetadata_Segments_WithTopologyConstraints
    notes = (
        "kai.scheduler/topology: cluster-topology, kai.scheduler/segment-topology-required-placement: rack, "
        "kai.scheduler/segment-topology-preferred-placement: node"
    )
    group = only(group_yaml(_pytorch_segment_topology(notes)))
    segment = Topology(required="rack", preferred="node")
    assert [(s.name, s.topology) for s in group.subgroups] == [
        ("master", None),
        ("worker", None),
        ("worker-0", segment),
        ("worker-1", segment),
    ]


def test_pytorch_segment_topology_takes_its_name_from_the_job_when_the_workers_give_none():
    # KAI: pytorch_grouper_test.go TestGetPodGroupMetadata_Segments_TopologyFromRootAnnotation
    group = only(
        group_yaml(
            _pytorch_segment_topology(
                "kai.scheduler/segment-topology-required-placement: rack",
                "{kai.scheduler/topology: cluster-topology}",
            )
        )
    )
    assert group.subgroups[2].topology == Topology(required="rack")


def test_pytorch_segment_levels_without_a_topology_name_constrain_nothing():
    # KAI: pytorch_grouper_test.go TestGetPodGroupMetadata_Segments_NoTopologyWhenMissing
    group = only(
        group_yaml(_pytorch_segment_topology("kai.scheduler/segment-topology-required-placement: rack"))
    )
    assert all(s.topology is None for s in group.subgroups)


def test_pytorch_more_than_ten_thousand_segments_is_refused():
    with pytest.raises(ManifestError) as err:
        group_yaml(_pytorch_segmented(10_001, 1))
    assert err.value.path.endswith("annotations.kai.scheduler/segment-size")


def test_xgboostjob_needs_a_master():
    with pytest.raises(ManifestError) as err:
        group_yaml(f"""
apiVersion: kubeflow.org/v1
kind: XGBoostJob
metadata: {{name: x}}
spec: {{xgbReplicaSpecs: {{Worker: {{replicas: 2, template: {{{POD_SPEC}}}}}}}}}
""")
    assert err.value.path == "spec.xgbReplicaSpecs.Master"


def test_kubeflow_replicas_default_to_one_as_the_operator_fills_them():
    group = only(
        group_yaml(f"""
apiVersion: kubeflow.org/v1
kind: TFJob
metadata: {{name: t}}
spec: {{tfReplicaSpecs: {{Worker: {{template: {{{POD_SPEC}}}}}}}}}
""")
    )
    assert group.min_available == 1


RAY = """
apiVersion: ray.io/v1
kind: RayCluster
metadata: {{name: r, labels: {labels}}}
spec:
  headGroupSpec: {{template: {{spec: {{containers: [{{name: h}}]}}}}}}
  workerGroupSpecs:
    - {{groupName: a, replicas: {replicas}, minReplicas: {min_replicas}, template: {{spec: {{containers: [{{name: w}}]}}}}}}
"""


def test_ray_min_replicas_zero_counts_the_replicas():
    group = only(group_yaml(RAY.format(labels="{}", replicas=3, min_replicas=0)))
    assert group.min_available == 4


def test_ray_priority_label_overrides_every_other_rule():
    group = only(
        group_yaml(RAY.format(labels="{ray.io/priority-class-name: inference}", replicas=1, min_replicas=1))
    )
    assert (group.priority_class, group.priority, group.preemptible) == ("inference", 125, False)


def _ray_with_worker_notes(notes: str) -> str:
    return RAY.format(labels="{}", replicas=2, min_replicas=2).replace(
        "template: {spec: {containers: [{name: w}]}}",
        f"template: {{metadata: {{annotations: {notes}}}, spec: {{containers: [{{name: w}}]}}}}",
    )


def test_ray_worker_group_takes_its_templates_topology_and_the_head_none():
    # KAI: ray_grouper.go getWorkerGroupTopologyConstraints
    notes = "{kai.scheduler/topology: t, kai.scheduler/topology-required-placement: rack}"
    group = only(group_yaml(_ray_with_worker_notes(notes)))
    assert [(s.name, s.topology) for s in group.subgroups] == [
        ("headgroup", None),
        ("a", Topology(required="rack")),
    ]


def test_ray_placement_level_without_a_topology_name_is_refused_naming_the_name():
    # KAI fails the grouping: the topology annotation is required once a placement level is set
    with pytest.raises(ManifestError) as err:
        group_yaml(_ray_with_worker_notes("{kai.scheduler/topology-preferred-placement: rack}"))
    assert err.value.path == "spec.workerGroupSpecs[0].template.metadata.annotations.kai.scheduler/topology"


def test_ray_min_replicas_above_replicas_is_rejected():
    with pytest.raises(ManifestError) as err:
        group_yaml(RAY.format(labels="{}", replicas=1, min_replicas=2))
    assert err.value.path == "spec.workerGroupSpecs[0].minReplicas"


def test_lws_leader_ready_starts_the_gang_at_the_leader():
    groups = group_yaml("""
apiVersion: leaderworkerset.x-k8s.io/v1
kind: LeaderWorkerSet
metadata: {name: l}
spec:
  startupPolicy: LeaderReady
  leaderWorkerTemplate: {size: 3, workerTemplate: {spec: {containers: [{name: c}]}}}
""")
    group = only(groups)
    assert group.min_available == 1 and group.subgroups == [SubGroup(name="leader", min_available=1)]
    assert total_pods(group) == 3


def _lws(size: int, segment: int) -> str:
    return f"""
apiVersion: leaderworkerset.x-k8s.io/v1
kind: LeaderWorkerSet
metadata: {{name: l}}
spec:
  leaderWorkerTemplate:
    size: {size}
    subGroupPolicy: {{subGroupSize: {segment}}}
    workerTemplate: {{spec: {{containers: [{{name: c}}]}}}}
"""


def test_lws_segments_count_the_leader_in_the_first():
    # size 4, segments of 2: the 3 workers do not split evenly, so the leader takes a place in segment-0
    group = only(group_yaml(_lws(4, 2)))
    assert _tree(group) == [
        ("segment-0", None, 2, 0),
        ("leader", "segment-0", None, 1),
        ("workers", "segment-0", None, 1),
        ("segment-1", None, None, 2),
    ]


def test_lws_every_segment_takes_the_segment_topology_and_the_leaders_leaves_none():
    # KAI: lws_grouper.go createSegmentSubgroups gives each segment the worker template's constraint
    text = _lws(4, 2).replace(
        "workerTemplate: {spec:",
        "workerTemplate: {metadata: {annotations: {kai.scheduler/topology: t, "
        "kai.scheduler/segment-topology-required-placement: rack}}, spec:",
    )
    group = only(group_yaml(text))
    rack = Topology(required="rack")
    assert [(s.name, s.topology) for s in group.subgroups] == [
        ("segment-0", rack),
        ("leader", None),
        ("workers", None),
        ("segment-1", rack),
    ]


def test_lws_leader_rides_on_top_of_segment_zero_when_workers_split_evenly():
    # size 5, segments of 2: 4 workers make two whole segments, the leader is an extra pod of segment-0
    group = only(group_yaml(_lws(5, 2)))
    assert [(s.name, s.min_available) for s in group.subgroups] == [
        ("segment-0", 0),
        ("leader", 1),
        ("workers", 2),
        ("segment-1", 2),
    ]
    assert sum(p.count for p in group.pods) == 5


def test_lws_size_is_required():
    with pytest.raises(ManifestError) as err:
        group_yaml("""
apiVersion: leaderworkerset.x-k8s.io/v1
kind: LeaderWorkerSet
metadata: {name: l}
spec: {leaderWorkerTemplate: {workerTemplate: {spec: {containers: [{name: c}]}}}}
""")
    assert err.value.path == "spec.leaderWorkerTemplate.size"


def test_knative_min_scale_zero_is_a_gang_of_zero():
    group = only(
        group_yaml("""
apiVersion: serving.knative.dev/v1
kind: Service
metadata: {name: k}
spec:
  template:
    metadata: {annotations: {autoscaling.knative.dev/min-scale: "0"}}
    spec: {containers: [{image: x}]}
""")
    )
    assert (group.min_available, total_pods(group)) == (0, 1)


def test_knative_min_scale_sets_the_gang_and_pod_count():
    group = only(
        group_yaml("""
apiVersion: serving.knative.dev/v1
kind: Service
metadata: {name: k, labels: {kai.scheduler/queue: serving}}
spec:
  template:
    metadata: {name: k-v2, annotations: {autoscaling.knative.dev/min-scale: "3"}}
    spec: {containers: [{image: x}]}
""")
    )
    assert (group.name, group.min_available, total_pods(group), group.queue) == ("k-v2", 3, 3, "serving")


def test_native_spark_driver_and_executors_share_the_selector_group():
    groups = group_yaml("""
apiVersion: v1
kind: Pod
metadata: {name: driver, labels: {spark-app-name: pi, spark-app-selector: spark-123}}
spec: {containers: [{name: d, resources: {requests: {cpu: "1"}}}]}
---
apiVersion: v1
kind: Pod
metadata:
  name: exec-1
  labels: {spark-app-name: pi, spark-app-selector: spark-123}
  ownerReferences: [{apiVersion: v1, kind: Pod, name: driver, uid: u}]
spec: {containers: [{name: e, resources: {requests: {cpu: "2"}}}]}
""")
    group = only(groups)
    assert (group.name, group.min_available) == ("spark-123", 1)
    assert [p.resources.cpu for p in group.pods] == [1000, 2000]


def test_spark_application_executors_and_gpu():
    group = only(
        group_yaml("""
apiVersion: sparkoperator.k8s.io/v1beta2
kind: SparkApplication
metadata: {name: s}
spec:
  type: Python
  driver: {cores: 1, memory: 2g}
  executor: {instances: 4, cores: 2, memory: 4g, gpu: {name: nvidia.com/gpu, quantity: 1}}
""")
    )
    executor = pods_by_role(group)["executor"]
    assert executor.count == 4 and executor.resources.gpu == 1.0
    assert executor.resources.memory == (4096 + 1638) * 2**20  # Python: 40% overhead, whole MiB


def test_argo_workflow_labels_reach_step_pods_and_owned_jobs():
    groups = group_yaml("""
apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata: {name: wf, labels: {kai.scheduler/queue: pipelines}}
spec:
  entrypoint: main
  templates:
    - name: main
      steps:
        - - {name: fan, template: work, withItems: [1, 2, 3]}
        - - {name: train, template: launch}
    - name: work
      container: {image: busybox}
    - name: launch
      resource:
        action: create
        setOwnerReference: true
        manifest: |
          apiVersion: kubeflow.org/v1
          kind: PyTorchJob
          metadata: {name: pt}
          spec: {pytorchReplicaSpecs: {Worker: {replicas: 2, template: {spec: {containers: [{name: c}]}}}}}
""")
    assert [g.name for g in groups] == ["wf-fan-0", "wf-fan-1", "wf-fan-2", "wf-train", "pt"]
    assert {g.queue for g in groups} == {"pipelines"}
    assert (groups[-1].kind, groups[-1].min_available) == ("PyTorchJob", 2)


def test_argo_step_naming_a_missing_template_is_rejected():
    with pytest.raises(ManifestError) as err:
        group_yaml("""
apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata: {name: wf}
spec: {entrypoint: main, templates: [{name: main, steps: [[{name: a, template: nope}]]}]}
""")
    assert err.value.path == "spec.templates[0].steps[0][0].template"


def test_grove_scaling_group_replicas_above_min_get_their_own_gangs():
    groups = group_yaml("""
apiVersion: grove.io/v1alpha1
kind: PodCliqueSet
metadata: {name: g}
spec:
  template:
    priorityClassName: inference
    cliques:
      - {name: router, spec: {replicas: 1, podSpec: {containers: [{name: c}]}}}
      - {name: prefill, spec: {replicas: 2, podSpec: {containers: [{name: c}]}}}
    podCliqueScalingGroups:
      - {name: sg, cliqueNames: [prefill], replicas: 2, minAvailable: 1}
""")
    assert [(g.name, g.min_available) for g in groups] == [("g-0", 3), ("g-0-sg-0", 2)]
    assert {g.priority_class for g in groups} == {"inference"}


def test_notebook_v1_is_grouped_like_v1beta1():
    group = only(
        group_yaml("""
apiVersion: kubeflow.org/v1
kind: Notebook
metadata: {name: nb}
spec: {template: {spec: {containers: [{name: c}]}}}
""")
    )
    assert (group.kind, group.priority_class) == ("Notebook", "build")


def test_trainjob_without_its_runtime_runs_num_nodes_trainer_pods():
    group = only(
        group_yaml("""
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata: {name: tj}
spec:
  runtimeRef: {name: torch-distributed}
  trainer: {numNodes: 2, resourcesPerNode: {limits: {nvidia.com/gpu: 4}}}
""")
    )
    assert (group.min_available, group.pods[0].count, group.pods[0].resources.gpu) == (2, 2, 4.0)


def test_spotrequest_is_grouped_by_the_default_rule_as_inference():
    group = only(
        group_yaml("""
apiVersion: egx.nvidia.io/v1
kind: SPOTRequest
metadata: {name: spot}
spec: {template: {spec: {containers: [{name: c, resources: {limits: {nvidia.com/gpu: 1}}}]}}}
""")
    )
    assert (group.kind, group.priority_class, group.min_available) == ("SPOTRequest", "inference", 1)
    assert not group.preemptible


def test_spotrequest_naming_its_priority_class_keeps_it():
    group = only(
        group_yaml("""
apiVersion: egx.nvidia.io/v1
kind: SPOTRequest
metadata: {name: spot, labels: {priorityClassName: train}}
spec: {template: {spec: {containers: [{name: c}]}}}
""")
    )
    assert group.priority_class == "train"


HEAD_RACK = "{kai.scheduler/topology: t, kai.scheduler/topology-required-placement: rack}"
RAY_CLUSTER_SPEC = f"""
    headGroupSpec:
      template: {{metadata: {{annotations: {HEAD_RACK}}}, spec: {{containers: [{{name: h}}]}}}}
    workerGroupSpecs:
      - {{groupName: a, replicas: 1, template: {{spec: {{containers: [{{name: w}}]}}}}}}
"""


def _head_topology(text: str) -> Topology | None:
    return next(s.topology for s in only(group_yaml(text)).subgroups if s.name == "headgroup")


@pytest.mark.parametrize(
    ("kind", "cluster_key"),
    [("RayJob", "rayClusterSpec"), ("RayService", "rayClusterConfig")],
)
def test_a_ray_workloads_head_group_takes_the_topology_of_its_cluster_specs_head_template(kind, cluster_key):
    # KAI ray_grouper.go getHeadGroupTopologyConstraints reads the RayCluster KubeRay makes (named in the
    # workload's status) from spec.rayClusterSpec (RayJob) or spec.rayClusterConfig (RayService).
    text = f"""
apiVersion: ray.io/v1
kind: {kind}
metadata: {{name: r}}
spec:
  submissionMode: SidecarMode
  {cluster_key}:{RAY_CLUSTER_SPEC}"""
    assert _head_topology(text) == Topology(required="rack")


def test_a_rayclusters_head_group_takes_its_head_templates_topology():
    text = f"""
apiVersion: ray.io/v1
kind: RayCluster
metadata: {{name: rc}}
spec:{RAY_CLUSTER_SPEC.replace(chr(10) + "    ", chr(10) + "  ")}"""
    assert _head_topology(text) == Topology(required="rack")
