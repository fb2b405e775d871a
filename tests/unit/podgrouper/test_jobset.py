"""JobSet since KAI v0.16 (podgrouper-rules.md §4.9): one group, a parent sub-group per replicatedJob,
a leaf per replica; TrainJob through the same rule (§4.10)."""

from __future__ import annotations

import pytest
from muster.events import SubGroup, Topology
from muster.grouping.errors import ManifestError

from .support import group_yaml, only

POD = "{spec: {containers: [{name: c}]}}"


def jobset(*rjobs: str, order: str | None = None, annotations: str = "{}") -> str:
    policy = f"  startupPolicy: {{startupPolicyOrder: {order}}}\n" if order else ""
    jobs = "".join(f"    - {r}\n" for r in rjobs)
    return (
        "apiVersion: jobset.x-k8s.io/v1alpha2\nkind: JobSet\n"
        f"metadata: {{name: js, annotations: {annotations}}}\nspec:\n{policy}  replicatedJobs:\n{jobs}"
    )


def rjob(
    name: str, replicas: int | None = None, parallelism: int | None = None, annotations: str = ""
) -> str:
    fields = [f"name: {name}"]
    if replicas is not None:
        fields.append(f"replicas: {replicas}")
    spec = f"parallelism: {parallelism}, " if parallelism is not None else ""
    meta = f"metadata: {{annotations: {annotations}}}, " if annotations else ""
    fields.append(f"template: {{{meta}spec: {{{spec}template: {POD}}}}}")
    return "{" + ", ".join(fields) + "}"


def test_each_replica_is_a_leaf_under_its_replicated_job_holding_that_jobs_pods():
    # KAI: TestSingleReplicatedJobMultipleReplicas
    group = only(group_yaml(jobset(rjob("w", replicas=3, parallelism=4))))
    assert group.subgroups == [
        SubGroup(name="w", min_subgroup=3),
        *(SubGroup(name=f"w-replica-{i}", parent="w", min_available=4) for i in range(3)),
    ]
    assert [(p.subgroup, p.count, p.role) for p in group.pods] == [
        (f"w-replica-{i}", 4, "w") for i in range(3)
    ]


def test_any_order_needs_every_replicated_job():
    # KAI: TestMultipleReplicatedJobsAnyOrder
    group = only(group_yaml(jobset(rjob("a"), rjob("b", replicas=2, parallelism=4), order="AnyOrder")))
    assert (group.min_subgroup, group.min_available) == (2, 9)


def test_in_order_needs_one_replicated_job_and_counts_the_cheapest_as_its_minimum():
    # KAI: TestStartupPolicyInOrderRootMinSubGroup
    group = only(
        group_yaml(jobset(rjob("a", parallelism=3), rjob("b", replicas=2, parallelism=1), order="InOrder"))
    )
    assert (group.min_subgroup, group.min_available) == (1, 2)


def test_an_unknown_startup_order_is_read_as_any_order():
    group = only(group_yaml(jobset(rjob("a"), rjob("b"), order="Sideways")))
    assert group.min_subgroup == 2


def test_the_jobsets_batch_min_member_sets_the_root_and_wins_over_in_order():
    # KAI: TestJobSetAnnotationWinsOverInOrder
    text = jobset(
        rjob("a"), rjob("b"), rjob("c"), order="InOrder", annotations="{kai.scheduler/batch-min-member: '2'}"
    )
    assert only(group_yaml(text)).min_subgroup == 2


def test_the_jobsets_batch_min_member_is_capped_at_the_number_of_replicated_jobs():
    # KAI: TestJobSetAnnotationClampedToReplicatedJobCount
    text = jobset(rjob("a"), rjob("b"), annotations="{kai.scheduler/batch-min-member: '9'}")
    assert only(group_yaml(text)).min_subgroup == 2


@pytest.mark.parametrize("value", ["'0'", "'many'"])
def test_a_jobset_batch_min_member_below_one_or_not_a_number_is_refused_by_name(value):
    # KAI: TestJobSetAnnotationBelowOne, TestJobSetAnnotationUnparseable
    with pytest.raises(ManifestError) as err:
        group_yaml(jobset(rjob("a"), annotations=f"{{kai.scheduler/batch-min-member: {value}}}"))
    assert err.value.path == "metadata.annotations.kai.scheduler/batch-min-member"


def test_a_templates_batch_min_member_sets_each_replicas_leaf():
    # KAI: TestTemplateAnnotationOverridesLeafMinMember
    group = only(group_yaml(jobset(rjob("w", 2, 8, annotations="{kai.scheduler/batch-min-member: '5'}"))))
    assert [s.min_available for s in group.subgroups[1:]] == [5, 5]
    assert group.min_available == 10


# KAI accepts a value above parallelism (TestTemplateAnnotationGreaterThanParallelismAccepted) and the
# replica never starts; below one it refuses (TestTemplateAnnotationBelowOne).
@pytest.mark.parametrize("value", ["'10'", "'0'", "'x'"])
def test_a_templates_batch_min_member_above_parallelism_or_below_one_is_refused_where_written(value):
    with pytest.raises(ManifestError) as err:
        group_yaml(jobset(rjob("w", 1, 2, annotations=f"{{kai.scheduler/batch-min-member: {value}}}")))
    assert (
        err.value.path
        == "spec.replicatedJobs[0].template.metadata.annotations.kai.scheduler/batch-min-member"
    )


def test_parallelism_is_the_leaf_minimum_even_above_completions():
    text = jobset(
        "{name: w, template: {spec: {parallelism: 3, completions: 2, template: " + POD + "}}}",
        order="AnyOrder",
    )
    group = only(group_yaml(text))
    assert (group.subgroups[1].min_available, group.pods[0].count) == (3, 3)


def test_a_replicated_job_of_zero_replicas_is_refused_by_name():
    with pytest.raises(ManifestError) as err:
        group_yaml(jobset(rjob("a"), rjob("b", replicas=0)))
    assert err.value.path == "spec.replicatedJobs[1].replicas"


def test_a_jobset_without_replicated_jobs_is_refused():
    # KAI: TestEmptyReplicatedJobs
    with pytest.raises(ManifestError) as err:
        group_yaml(
            "apiVersion: jobset.x-k8s.io/v1alpha2\nkind: JobSet\nmetadata: {name: js}\nspec: {replicatedJobs: []}"
        )
    assert err.value.path == "spec.replicatedJobs"


def test_each_replicas_leaf_takes_its_replicated_jobs_topology_and_the_parent_none():
    # KAI: TestDistinctTopologiesAtJobSetAndReplicatedJobLevels
    notes = "{kai.scheduler/topology: t, kai.scheduler/topology-required-placement: rack}"
    group = only(group_yaml(jobset(rjob("w", 2, 4, annotations=notes))))
    rack = Topology(required="rack")
    assert [(s.name, s.topology) for s in group.subgroups] == [
        ("w", None),
        ("w-replica-0", rack),
        ("w-replica-1", rack),
    ]


def test_a_replicated_jobs_topology_name_without_a_level_constrains_nothing():
    group = only(group_yaml(jobset(rjob("w", 2, 4, annotations="{kai.scheduler/topology: t}"))))
    assert all(s.topology is None for s in group.subgroups)


def test_the_jobsets_own_topology_is_the_groups():
    notes = "{kai.scheduler/topology: t, kai.scheduler/topology-required-placement: rack}"
    group = only(group_yaml(jobset(rjob("w"), annotations=notes)))
    assert group.topology is not None and group.topology.required == "rack"


TRAINJOB = """
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata: {{name: tj, annotations: {annotations}}}
spec:
  runtimeRef: {{name: rt}}
  trainer: {{numNodes: 2}}
---
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainingRuntime
metadata: {{name: rt}}
spec:
  template:
    spec:
      replicatedJobs:
        - {{name: initializer, template: {{spec: {{template: {POD}}}}}}}
        - {{name: node, template: {{spec: {{template: {POD}}}}}}}
"""


def test_a_trainjob_is_one_group_with_the_jobset_tree_its_runtime_shapes():
    group = only(group_yaml(TRAINJOB.format(annotations="{}", POD=POD)))
    assert (group.name, group.kind, group.min_subgroup) == ("tj", "TrainJob", 2)
    assert [(s.name, s.parent, s.min_available) for s in group.subgroups if s.parent] == [
        ("initializer-replica-0", "initializer", 1),
        ("node-replica-0", "node", 2),
    ]


def test_a_trainjobs_batch_min_member_reaches_the_jobsets_root():
    text = TRAINJOB.format(annotations="{kai.scheduler/batch-min-member: '1'}", POD=POD)
    assert only(group_yaml(text)).min_subgroup == 1


def test_a_trainjobs_bad_batch_min_member_is_refused_on_the_trainjob():
    with pytest.raises(ManifestError) as err:
        group_yaml(TRAINJOB.format(annotations="{kai.scheduler/batch-min-member: '0'}", POD=POD))
    assert err.value.path == "metadata.annotations.kai.scheduler/batch-min-member"


def test_a_replicated_job_that_asks_to_skip_the_podgrouper_is_refused_by_name():
    annotations = '{kai.scheduler/skip-podgrouper: "true"}'
    with pytest.raises(ManifestError) as err:
        group_yaml(jobset(rjob("a", annotations=annotations)))
    assert err.value.path.endswith("template.metadata.annotations.kai.scheduler/skip-podgrouper")
