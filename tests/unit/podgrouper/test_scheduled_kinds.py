"""CronWorkflow and ScheduledSparkApplication: each run grouped as the object it creates.

The manifests live in ``manifests/`` beside this file; the shared upstream
folder has none of these kinds.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import yaml
from muster.events import PodSpec
from muster.grouping.group import group_manifests

from .support import MI, group_yaml, only, pods_by_role, total_pods

HERE = Path(__file__).parent / "manifests"


def without_label(pods: list[PodSpec], key: str) -> list[PodSpec]:
    return [msgspec.structs.replace(p, labels={k: v for k, v in p.labels.items() if k != key}) for p in pods]


def docs_of(*relative: str) -> list[dict[str, Any]]:
    return [
        doc
        for name in relative
        for doc in yaml.safe_load_all((HERE / name).read_text(encoding="utf-8"))
        if doc is not None
    ]


def test_every_manifest_here_is_used_by_a_test():
    used = {
        "cronworkflow/nightly-eval.yaml",
        "cronworkflow/weekly-report.yaml",
        "scheduledsparkapplication/hourly-etl.yaml",
    }
    assert {str(p.relative_to(HERE)) for p in HERE.glob("*/*.yaml")} == used


def test_cron_workflow_runs_its_container_step_as_a_group_of_one():
    group = only(group_manifests(docs_of("cronworkflow/nightly-eval.yaml")))
    assert (group.name, group.kind, group.min_available, total_pods(group)) == (
        "nightly-eval",
        "CronWorkflow",
        1,
        1,
    )
    assert (group.queue, group.priority_class, group.preemptible) == ("default-queue", "train", True)


def test_cron_workflow_is_grouped_exactly_as_the_workflow_it_creates():
    [cron] = docs_of("cronworkflow/nightly-eval.yaml")
    workflow = {
        "apiVersion": cron["apiVersion"],
        "kind": "Workflow",
        "metadata": {"name": cron["metadata"]["name"]},
        "spec": cron["spec"]["workflowSpec"],
    }
    [from_cron], [from_workflow] = group_manifests([cron]), group_manifests([workflow])
    assert from_cron.kind == "CronWorkflow" and from_workflow.kind == "Workflow"
    # A run's name is made when it starts: its pods cannot carry it.
    assert (from_cron.name, from_cron.pods, from_cron.min_available) == (
        from_workflow.name,
        without_label(from_workflow.pods, "workflows.argoproj.io/workflow"),
        from_workflow.min_available,
    )


def test_cron_workflow_resolves_the_workflow_template_submitted_with_it():
    groups = group_manifests(docs_of("cronworkflow/weekly-report.yaml"))
    assert [(g.name, g.kind, g.min_available, total_pods(g)) for g in groups] == [
        ("weekly-report-collect", "CronWorkflow", 1, 1)
    ]


def test_scheduled_spark_application_is_one_group_of_min_one_for_driver_and_executors():
    group = only(group_manifests(docs_of("scheduledsparkapplication/hourly-etl.yaml")))
    pods = pods_by_role(group)
    assert (group.name, group.kind, group.min_available, total_pods(group)) == (
        "hourly-etl",
        "ScheduledSparkApplication",
        1,
        2,
    )
    assert pods["driver"].resources.memory == (512 + 384) * MI and pods["executor"].resources.cpu == 1000


def test_scheduled_spark_application_is_grouped_exactly_as_the_application_it_creates():
    [scheduled] = docs_of("scheduledsparkapplication/hourly-etl.yaml")
    app = {
        "apiVersion": scheduled["apiVersion"],
        "kind": "SparkApplication",
        "metadata": scheduled["metadata"],
        "spec": scheduled["spec"]["template"],
    }
    [from_scheduled], [from_app] = group_manifests([scheduled]), group_manifests([app])
    # A run's name is made when it starts: its pods cannot carry it.
    assert (from_scheduled.name, from_scheduled.pods, from_scheduled.min_available) == (
        from_app.name,
        without_label(from_app.pods, "sparkoperator.k8s.io/app-name"),
        from_app.min_available,
    )


CRON = """
apiVersion: argoproj.io/v1alpha1
kind: CronWorkflow
metadata: {{name: nightly, labels: {cron_labels}}}
spec:
  schedules: ["0 2 * * *"]
  workflowMetadata: {{labels: {workflow_labels}}}
  workflowSpec:
    entrypoint: main
    templates: [{{name: main, container: {{image: busybox}}}}]
"""


def test_a_queue_label_on_the_cron_workflow_places_its_runs():
    group = only(group_yaml(CRON.format(cron_labels="{kai.scheduler/queue: nightly}", workflow_labels="{}")))
    assert group.queue == "nightly"


def test_the_created_workflows_own_queue_label_wins_over_the_cron_workflows():
    group = only(
        group_yaml(
            CRON.format(
                cron_labels="{kai.scheduler/queue: cron}", workflow_labels="{kai.scheduler/queue: run}"
            )
        )
    )
    assert group.queue == "run"


def test_a_queue_label_on_the_scheduled_spark_application_places_its_runs():
    group = only(
        group_yaml("""
apiVersion: sparkoperator.k8s.io/v1beta2
kind: ScheduledSparkApplication
metadata: {name: etl, labels: {kai.scheduler/queue: batch}}
spec:
  schedule: "@daily"
  template: {driver: {cores: 1}, executor: {instances: 3}}
""")
    )
    assert (group.queue, total_pods(group)) == ("batch", 4)
