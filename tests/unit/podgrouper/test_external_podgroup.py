"""KAI's externally created PodGroups (podgrouper-rules.md §1.1, kai-semantics.md §14): a
``scheduling.run.ai/v2alpha2`` PodGroup submitted with the pods that name it."""

from __future__ import annotations

import pytest
from muster.events import SubGroup, Topology
from muster.grouping.errors import ManifestError

from .support import group_yaml, only, total_pods

SKIP = "kai.scheduler/skip-podgrouper"
LEAF = "kai.scheduler/subgroup-name"

TREE_PODGROUP = """
apiVersion: scheduling.run.ai/v2alpha2
kind: PodGroup
metadata: {name: trainer, labels: {kai.scheduler/node-pool: big}}
spec:
  queue: team-a
  priorityClassName: build
  preemptibility: preemptible
  minSubGroup: 1
  preemptionDelay: 30s
  stalenessGracePeriod: -1s
  topologyConstraint: {topology: cluster, requiredTopologyLevel: rack, preferredTopologyLevel: host}
  subGroups:
    - {name: replicas, minSubGroup: 1}
    - {name: r0, parent: replicas, minMember: 2}
    - {name: r1, parent: replicas, minMember: 0}
"""


def skipped_job(
    name: str = "w", *, group: str = "trainer", leaf: str | None = "r0", parallelism: int = 2
) -> str:
    labels = f"{{{LEAF}: {leaf}}}" if leaf else "{}"
    return f"""
apiVersion: batch/v1
kind: Job
metadata: {{name: {name}, annotations: {{{SKIP}: "true"}}}}
spec:
  parallelism: {parallelism}
  template:
    metadata: {{annotations: {{pod-group-name: {group}}}, labels: {labels}}}
    spec: {{containers: [{{name: c, resources: {{limits: {{nvidia.com/gpu: 1}}}}}}]}}
"""


def bare_pod(name: str, group: str, leaf: str | None = None) -> str:
    labels = f"{{{LEAF}: {leaf}}}" if leaf else "{}"
    return f"""
apiVersion: v1
kind: Pod
metadata: {{name: {name}, annotations: {{pod-group-name: {group}}}, labels: {labels}}}
spec: {{containers: [{{name: c}}]}}
"""


def podgroup(spec: str, name: str = "pg") -> str:
    return (
        f"apiVersion: scheduling.run.ai/v2alpha2\nkind: PodGroup\nmetadata: {{name: {name}}}\nspec:\n{spec}"
    )


def refusal(text: str) -> ManifestError:
    with pytest.raises(ManifestError) as caught:
        group_yaml(text)
    return caught.value


def test_the_podgroup_spec_decides_the_group_and_its_tree():
    group = only(group_yaml("---".join([TREE_PODGROUP, skipped_job(), bare_pod("p1", "trainer", "r1")])))
    assert (group.name, group.kind, group.queue, group.pool) == ("trainer", "PodGroup", "team-a", "big")
    assert (group.priority_class, group.priority, group.preemptible) == ("build", 100, True)
    assert group.min_subgroup == 1
    assert group.subgroups == [
        SubGroup(name="replicas", min_subgroup=1),
        SubGroup(name="r0", parent="replicas", min_available=2),
        SubGroup(name="r1", parent="replicas", min_available=0),
    ]
    assert group.topology == Topology(required="rack", preferred="host")
    assert (group.preemption_delay, group.stale_gang_grace) == (30.0, -1.0)


def test_pods_join_the_leaves_their_label_names():
    # KAI: TestAssignPodToGroupAndSubGroup (pkg/podgrouper/pod_controller_test.go) writes these two keys.
    group = only(group_yaml("---".join([TREE_PODGROUP, skipped_job(), bare_pod("p1", "trainer", "r1")])))
    assert [(p.subgroup, p.count) for p in group.pods] == [("r0", 2), ("r1", 1)]


def test_pod_labels_do_not_choose_the_queue_of_an_external_podgroup():
    job = skipped_job().replace("labels: {", "labels: {kai.scheduler/queue: other, ")
    assert only(group_yaml("---".join([TREE_PODGROUP, job]))).queue == "team-a"


def test_min_member_zero_makes_a_podgroup_without_gang():
    text = podgroup("  queue: q\n  minMember: 0\n", name="trainer") + "---" + skipped_job(leaf=None)
    group = only(group_yaml(text))
    assert (group.min_available, total_pods(group)) == (0, 2)


def test_an_absent_min_member_means_one_pod():
    group = only(group_yaml(podgroup("  queue: q\n", name="trainer") + "---" + skipped_job(leaf=None)))
    assert group.min_available == 1


def test_a_bare_pod_naming_a_submitted_podgroup_joins_it_without_the_skip_annotation():
    # KAI: TestIsOrphanPodWithPodGroup (pkg/podgrouper/pod_controller_test.go).
    text = "---".join([podgroup("  queue: q\n  minMember: 2\n"), bare_pod("a", "pg"), bare_pod("b", "pg")])
    group = only(group_yaml(text))
    assert (group.kind, group.min_available, total_pods(group)) == ("PodGroup", 2, 2)


def test_pods_of_several_workloads_share_one_podgroup():
    text = "---".join([TREE_PODGROUP, skipped_job("a"), skipped_job("b", leaf="r1", parallelism=3)])
    assert [(p.subgroup, p.count) for p in only(group_yaml(text)).pods] == [("r0", 2), ("r1", 3)]


def test_a_skipped_pod_naming_a_podgroup_not_submitted_is_refused_naming_the_annotation():
    error = refusal("---".join([TREE_PODGROUP, skipped_job(group="elsewhere")]))
    assert (error.document, error.path) == (1, "spec.template.metadata.annotations.pod-group-name")
    assert "'elsewhere'" in error.message and "same file" in error.message


@pytest.mark.parametrize(
    ("owner", "pod", "path"),
    [
        (f'{{{SKIP}: "true"}}', "{}", "spec.template.metadata.annotations.pod-group-name"),
        ("{}", f'{{{SKIP}: "true"}}', "spec.template.metadata.annotations.pod-group-name"),
    ],
)
def test_skip_podgrouper_without_a_podgroup_is_refused_saying_how_to_submit_one(owner, pod, path):
    error = refusal(
        f"apiVersion: batch/v1\nkind: Job\nmetadata: {{name: j, annotations: {owner}}}\n"
        f"spec: {{template: {{metadata: {{annotations: {pod}}}, spec: {{containers: [{{name: c}}]}}}}}}\n"
    )
    assert error.path == path
    assert "scheduling.run.ai/v2alpha2" in error.message and "submitted with it" in error.message


@pytest.mark.parametrize("value", ["false", "True", "yes"])
def test_any_other_skip_value_is_ignored_as_kai_ignores_it(value):
    job = skipped_job().replace('"true"', f'"{value}"')
    assert only(group_yaml(job)).name == "w"


def test_a_pod_outside_the_tree_is_refused_naming_its_label():
    error = refusal("---".join([TREE_PODGROUP, skipped_job(leaf="replicas")]))
    assert error.path == f"spec.template.metadata.labels.{LEAF}"
    assert "not a leaf" in error.message


def test_a_pod_without_a_leaf_in_a_tree_is_refused_naming_its_label():
    error = refusal("---".join([TREE_PODGROUP, skipped_job(leaf=None)]))
    assert error.path == f"spec.template.metadata.labels.{LEAF}"


def test_a_podgroup_no_pod_names_is_refused():
    error = refusal("---".join([TREE_PODGROUP, bare_pod("p", "other")]))
    assert (error.document, error.path) == (0, "metadata.name")


@pytest.mark.parametrize(
    ("spec", "path"),
    [
        ("  queue: q\n  markUnschedulable: true\n", "spec.markUnschedulable"),
        ("  queue: q\n  schedulingBackoff: 1\n", "spec.schedulingBackoff"),
        ("  queue: q\n  minMembers: 2\n", "spec.minMembers"),
        (
            "  queue: q\n  topologyConstraint: {requiredLevel: rack}\n",
            "spec.topologyConstraint.requiredLevel",
        ),
    ],
)
def test_a_field_muster_cannot_honour_is_refused_by_name(spec, path):
    error = refusal(podgroup(spec) + "---" + bare_pod("p", "pg"))
    assert (error.document, error.path) == (0, path)


@pytest.mark.parametrize(
    ("spec", "path"),
    [
        # KAI's admission webhook rejects these (kai-semantics.md §14.1).
        (
            "  queue: q\n  minMember: 1\n  minSubGroup: 1\n  subGroups: [{name: a, minMember: 1}]\n",
            "spec.minSubGroup",
        ),
        ("  queue: q\n  subGroups: [{name: a}]\n", "spec.subGroups[0].minMember"),
        (
            "  queue: q\n  subGroups: [{name: a, minMember: 1}, {name: b, parent: a, minMember: 1}]\n",
            "spec.subGroups[0].minMember",
        ),
        (
            "  queue: q\n  subGroups: [{name: a, minMember: 1}, {name: a, minMember: 1}]\n",
            "spec.subGroups[1].name",
        ),
        ("  queue: q\n  subGroups: [{name: a, parent: nowhere, minMember: 1}]\n", "spec.subGroups[0].parent"),
        (
            "  queue: q\n  subGroups: [{name: a, minSubGroup: 1, minMember: 1}]\n",
            "spec.subGroups[0].minSubGroup",
        ),
        ("  queue: q\n  minSubGroup: 2\n  subGroups: [{name: a, minMember: 1}]\n", "spec.minSubGroup"),
        ("  queue: q\n  minMember: -1\n", "spec.minMember"),
        ("  queue: q\n  preemptionDelay: -5s\n", "spec.preemptionDelay"),
        ("  queue: q\n  stalenessGracePeriod: 30\n", "spec.stalenessGracePeriod"),
        ("  queue: q\n  preemptibility: sometimes\n", "spec.preemptibility"),
        ("  minMember: 1\n", "spec.queue"),
        ("  queue: q\n  minMember: 3\n", "spec.minMember"),
    ],
)
def test_a_podgroup_kai_would_reject_or_never_run_is_refused_naming_the_field(spec, path):
    error = refusal(podgroup(spec) + "---" + bare_pod("p", "pg", "a" if "subGroups" in spec else None))
    assert (error.document, error.path) == (0, path)


def test_a_leaf_more_pods_than_name_it_is_refused():
    error = refusal("---".join([TREE_PODGROUP, skipped_job(parallelism=1)]))
    assert (error.document, error.path) == (0, "spec.subGroups[1].minMember")


def test_only_the_v2alpha2_podgroup_is_read():
    error = refusal(podgroup("  queue: q\n").replace("v2alpha2", "v2alpha1") + "---" + bare_pod("p", "pg"))
    assert (error.document, error.path) == (0, "apiVersion")


def test_a_workload_whose_pods_only_partly_ask_to_be_left_alone_is_refused():
    pytorch = f"""
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {{name: t}}
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      template:
        metadata: {{annotations: {{{SKIP}: "true", pod-group-name: pg}}}}
        spec: {{containers: [{{name: c}}]}}
    Worker:
      replicas: 1
      template: {{spec: {{containers: [{{name: c}}]}}}}
"""
    error = refusal(podgroup("  queue: q\n") + "---" + pytorch)
    assert error.path == f"spec.pytorchReplicaSpecs.Master.template.metadata.annotations.{SKIP}"


def test_the_submission_queue_overrides_the_podgroups():
    text = podgroup("  minMember: 1\n") + "---" + bare_pod("p", "pg")
    assert only(group_yaml(text, queue_override="ops")).queue == "ops"


def test_a_podgroup_name_that_is_no_job_name_is_refused_naming_it():
    error = refusal(podgroup("  queue: q\n", name="Not_A_Name") + "---" + bare_pod("p", "Not_A_Name"))
    assert (error.document, error.path) == (0, "metadata.name")
