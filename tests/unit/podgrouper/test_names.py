"""The podgrouper names jobs as Kubernetes names PodGroups: a workload whose name (its own, or one it
makes or labels) breaks the rule is rejected naming the field, before any reader sees it.

Issue #25: team-a's `coll x` and team-b's `coll_x` shared one pod folder on their node.
"""

from __future__ import annotations

from typing import Any

import pytest
from muster.events import PodGroupCreated, WorkloadRejected, WorkloadSubmitted
from muster.grouping.submission import group_submission

POD_TEMPLATE = {"spec": {"containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": 1}}}]}}


def job(name: Any = "coll-x", labels: dict | None = None, parallelism: int = 1, **meta) -> dict:
    metadata = {"labels": labels or {}, **meta}
    if name is not None:
        metadata["name"] = name
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": metadata,
        "spec": {"parallelism": parallelism, "template": POD_TEMPLATE},
    }


def answer(*manifests: dict, queue: str | None = None) -> list:
    return group_submission(WorkloadSubmitted(uid="u", manifests=list(manifests), queue=queue))


def rejected(*manifests: dict, queue: str | None = None) -> WorkloadRejected:
    [refusal] = answer(*manifests, queue=queue)
    assert isinstance(refusal, WorkloadRejected), refusal
    return refusal


@pytest.mark.parametrize(
    "name", ["coll x", "coll_x", "Coll-x", "team-b/coll-x", "coll\nx", "coll\u202ex", "x" * 8001]
)
def test_a_workload_whose_name_kubernetes_refuses_is_rejected_naming_metadata_name(name):
    refusal = rejected(job(name))
    assert refusal.field == "metadata.name" and "is not a valid job name" in refusal.error


def test_the_rejection_shows_the_name_and_says_what_is_wrong_with_it():
    assert rejected(job("Coll x")).error.startswith(
        "\"Coll x\" is not a valid job name: it holds an uppercase letter 'C' as character 1; "
    )


def test_a_generated_name_is_checked_naming_generate_name():
    refusal = rejected(job(None, generateName="coll_x-"))
    assert refusal.field == "metadata.generateName"


def test_a_job_name_made_longer_than_253_characters_is_rejected_naming_the_name_it_was_made_from():
    # A Deployment of two replicas makes two groups, <name>-0 and <name>-1.
    deployment = {**job("a" * 252), "apiVersion": "apps/v1", "kind": "Deployment"}
    deployment["spec"] = {"replicas": 2, "template": POD_TEMPLATE}
    refusal = rejected(deployment)
    assert refusal.field == "metadata.name" and "makes the job name" in refusal.error


@pytest.mark.parametrize(
    ("labels", "field"),
    [
        ({"kai.scheduler/queue": "Team A"}, "metadata.labels.kai.scheduler/queue"),
        ({"runai/queue": "team_a"}, "metadata.labels.runai/queue"),
        ({"project": "team/a"}, "metadata.labels.project"),
        ({"kai.scheduler/node-pool": "a b"}, "metadata.labels.kai.scheduler/node-pool"),
    ],
)
def test_a_queue_or_pool_a_label_names_is_checked_naming_the_label(labels, field):
    refusal = rejected(job(labels=labels))
    assert refusal.field == field and "is not a valid" in refusal.error


def test_a_group_name_a_pod_annotation_gives_is_checked_naming_the_annotation():
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "annotations": {"pod-group-name": "my group"}},
    }
    pod["spec"] = POD_TEMPLATE["spec"]
    assert rejected(pod).field == "metadata.annotations.pod-group-name"


def test_a_submission_naming_a_queue_kubernetes_refuses_is_rejected_naming_the_queue():
    assert rejected(job(), queue="Team A").field == "queue"


def test_a_command_job_naming_a_bad_queue_is_rejected_naming_its_field():
    command = {
        "apiVersion": "muster.dev/v1",
        "kind": "Command",
        "metadata": {"name": "train"},
        "spec": {"queue": "team a", "command": ["python", "train.py"]},
    }
    refusal = rejected(command)
    assert refusal.field == "spec.queue" and "is not a valid queue name" in refusal.error


def test_valid_names_group_as_before():
    [group] = answer(
        job("coll-x.v2", labels={"kai.scheduler/queue": "team-a", "kai.scheduler/node-pool": "A100_east"})
    )
    assert isinstance(group, PodGroupCreated)
    assert (group.name, group.queue, group.pool) == ("coll-x.v2", "team-a", "A100_east")
