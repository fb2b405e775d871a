"""What a group's pods are, from what the workload is: a command, container images, or nothing to run."""

from __future__ import annotations

import pytest
from muster.grouping import command_job, muster_job
from muster.grouping.errors import ManifestError
from muster.grouping.group import group_manifests

from .support import argo_workflow, group_yaml, only

PYTORCH = """
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {{name: mnist}}
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      template: {{spec: {{containers: [{{name: m, {master}resources: {{limits: {{nvidia.com/gpu: 1}}}}}}]}}}}
    Worker:
      replicas: 2
      template: {{spec: {{containers: [{{name: w, resources: {{limits: {{nvidia.com/gpu: 1}}}}}}]}}}}
"""


def test_a_command_is_a_group_of_command_pods():
    (group,) = group_manifests([command_job.manifest("train", {"queue": "q", "command": ["python", "t.py"]})])
    assert group.runtime == "command"


def test_a_muster_job_is_a_group_of_simulated_pods():
    (group,) = group_manifests([muster_job.manifest({"name": "j", "queue": "q", "pods": [{"count": 1}]})])
    assert group.runtime == "simulated"


def test_a_muster_job_that_asks_to_be_a_command_is_refused_naming_the_field():
    with pytest.raises(ManifestError) as err:
        group_manifests(
            [muster_job.manifest({"name": "j", "queue": "q", "runtime": "command", "pods": [{"count": 1}]})]
        )
    assert err.value.path == "spec.runtime"
    assert "`muster run`" in err.value.message


def test_a_manifest_whose_containers_name_an_image_is_a_group_of_image_pods():
    group = only(group_yaml(PYTORCH.format(master="image: pytorch/pytorch:2.3, ")))
    assert group.runtime == "image"


def test_a_manifest_that_names_no_image_has_nothing_to_run_and_is_simulated():
    assert only(group_yaml(PYTORCH.format(master=""))).runtime == "simulated"


def test_an_init_container_image_is_an_image_to_run():
    text = """
apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  initContainers: [{name: fetch, image: busybox}]
  containers: [{name: main}]
"""
    assert only(group_yaml(text)).runtime == "image"


def test_a_spark_application_runs_its_image():
    text = """
apiVersion: sparkoperator.k8s.io/v1beta2
kind: SparkApplication
metadata: {name: pi}
spec:
  type: Scala
  image: spark:3.5.0
  driver: {cores: 1}
  executor: {cores: 1, instances: 2}
"""
    assert only(group_yaml(text)).runtime == "image"


def test_an_argo_step_runs_its_containers_image():
    text = argo_workflow("container: {image: alpine, command: [echo, hi]}")
    assert only(group_yaml(text)).runtime == "image"


def test_bare_pods_of_one_group_need_images_when_one_of_them_does():
    text = """
apiVersion: v1
kind: Pod
metadata: {name: a, annotations: {pod-group-name: g}}
spec: {containers: [{name: main}]}
---
apiVersion: v1
kind: Pod
metadata: {name: b, annotations: {pod-group-name: g}}
spec: {containers: [{name: main, image: busybox}]}
"""
    assert [(g.name, g.runtime) for g in group_yaml(text)] == [("g", "image")]
