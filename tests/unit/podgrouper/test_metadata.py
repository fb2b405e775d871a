"""Queue, priority, preemptibility, pool and topology: KAI's resolution for every kind."""

from __future__ import annotations

import pytest
from muster.events import Topology
from muster.grouping.errors import ManifestError

from .support import group_yaml, only


def bare_pod(labels: str = "{}", annotations: str = "{}", spec_extra: str = "") -> str:
    return f"""
apiVersion: v1
kind: Pod
metadata: {{name: p, labels: {labels}, annotations: {annotations}}}
spec: {{containers: [{{name: c}}] {spec_extra}}}
"""


def job(job_labels: str = "{}", pod_labels: str = "{}", spec_extra: str = "") -> str:
    return f"""
apiVersion: batch/v1
kind: Job
metadata: {{name: j, labels: {job_labels}}}
spec: {{template: {{metadata: {{labels: {pod_labels}}}, spec: {{containers: [{{name: c}}] {spec_extra}}}}}}}
"""


def test_queue_label_on_the_owner_wins_over_the_pod():
    assert only(group_yaml(job("{kai.scheduler/queue: a}", "{kai.scheduler/queue: b}"))).queue == "a"


def test_queue_label_on_the_pod_is_used_when_the_owner_has_none():
    assert only(group_yaml(job("{}", "{kai.scheduler/queue: b}"))).queue == "b"


def test_older_runai_queue_label_is_honoured():
    assert only(group_yaml(job("{runai/queue: legacy}"))).queue == "legacy"


def test_project_label_with_node_pool_names_the_queue():
    group = only(group_yaml(job("{project: vision}", "{kai.scheduler/node-pool: a100}")))
    assert (group.queue, group.pool) == ("vision-a100", "a100")


def test_without_labels_the_queue_is_default_queue():
    assert only(group_yaml(job())).queue == "default-queue"


def test_queue_override_wins_over_labels():
    assert only(group_yaml(job("{kai.scheduler/queue: a}"), queue_override="ops")).queue == "ops"


def test_owner_priority_label_beats_pod_spec_priority_class():
    group = only(group_yaml(job("{priorityClassName: inference}", spec_extra=", priorityClassName: build")))
    assert group.priority_class == "inference"


def test_pod_spec_priority_class_is_used():
    assert only(group_yaml(job(spec_extra=", priorityClassName: build-preemptible"))).priority == 75


def test_unknown_priority_class_keeps_its_name_at_train_value():
    group = only(group_yaml(job("{priorityClassName: gold}")))
    assert (group.priority_class, group.priority, group.preemptible) == ("gold", 50, True)


def test_priority_class_document_in_the_batch_gives_the_value():
    text = (
        job("{priorityClassName: gold}")
        + """
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: gold}
value: 1000
"""
    )
    group = only(group_yaml(text))
    assert (group.priority, group.preemptible) == (1000, False)


def test_preemptibility_label_decouples_it_from_priority():
    group = only(group_yaml(job("{priorityClassName: inference, kai.scheduler/preemptibility: preemptible}")))
    assert (group.priority, group.preemptible) == (125, True)


def test_an_invalid_preemptibility_value_is_rejected():
    with pytest.raises(ManifestError, match="kai.scheduler/preemptibility"):
        group_yaml(job("{kai.scheduler/preemptibility: sometimes}"))


def test_topology_annotations_on_the_top_owner_become_the_constraint():
    text = bare_pod(
        annotations="{kai.scheduler/topology: t, kai.scheduler/topology-required-placement: rack}"
    )
    assert only(group_yaml(text)).topology == Topology(required="rack")


def test_submission_time_and_uid_are_carried():
    group = only(group_yaml(bare_pod(), submitted_at=12.5, uid="w-1"))
    assert (group.submitted_at, group.workload_uid) == (12.5, "w-1")


def test_generated_names_depend_only_on_the_submission_uid():
    text = "apiVersion: v1\nkind: Pod\nmetadata: {generateName: x-}\nspec: {containers: [{name: c}]}"
    first, again, other = (only(group_yaml(text, uid=u)).name for u in ("a", "a", "b"))
    assert first == again != other and first.startswith("x-")


def test_pod_group_name_annotation_groups_bare_pods_together():
    text = (
        bare_pod(annotations="{pod-group-name: mine}")
        + "---"
        + bare_pod(annotations="{pod-group-name: mine}").replace("name: p", "name: q")
    )
    group = only(group_yaml(text))
    assert (group.name, len(group.pods)) == ("mine", 2)
