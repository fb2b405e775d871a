"""A pod's MIG profiles reach its group as MIG instances the allocator counts against quota; what muster
cannot count is refused naming the field (kai-semantics.md §17)."""

from __future__ import annotations

import pytest
from muster.grouping.errors import ManifestError

from .support import WORKER_SPEC, group_yaml, only, two_pytorch_workers

POD = """
apiVersion: v1
kind: Pod
metadata: {name: infer}
spec:
  containers: [{name: c, image: i, resources: {limits: {nvidia.com/mig-3g.40gb: 2, cpu: 2}}}]
"""
PYTORCH = two_pytorch_workers("{requests: {nvidia.com/mig-1g.10gb: 1}}")


def refusal(text: str) -> ManifestError:
    with pytest.raises(ManifestError) as err:
        group_yaml(text)
    return err.value


def test_a_pods_mig_profile_reaches_its_group_as_instances_of_that_profile():
    pod = only(group_yaml(POD)).pods[0]
    assert pod.resources.extended == {"nvidia.com/mig-3g.40gb": 2}
    assert pod.resources.gpu == 0
    assert pod.resources.cpu == 2000


def test_every_replica_of_a_framework_asks_for_its_mig_instance():
    group = only(group_yaml(PYTORCH))
    assert [(p.count, p.resources.extended) for p in group.pods] == [(2, {"nvidia.com/mig-1g.10gb": 1})]


def test_a_mig_resource_that_does_not_name_its_slices_is_refused_by_name():
    err = refusal(PYTORCH.replace("mig-1g.10gb", "mig-1g.10gb+me"))
    assert err.path == f"{WORKER_SPEC}.containers[0].resources.requests.nvidia.com/mig-1g.10gb+me"
    assert "nvidia.com/mig-<g>g.<m>gb" in err.message


def test_mig_instances_and_whole_gpus_in_one_pod_are_refused():
    text = POD.replace("cpu: 2}", "cpu: 2}}}, {name: d, image: i, resources: {limits: {nvidia.com/gpu: 1}")
    err = refusal(text)
    assert err.path == "spec.containers"
    assert "nvidia.com/mig-3g.40gb" in err.message and "not both" in err.message


def test_mig_instances_and_a_gpu_fraction_in_one_pod_are_refused():
    text = POD.replace(
        "metadata: {name: infer}", 'metadata: {name: infer, annotations: {gpu-fraction: "0.5"}}'
    )
    assert "not both" in refusal(text).message


def test_a_legacy_mig_annotation_is_refused_since_kai_never_schedules_such_a_pod():
    text = POD.replace(
        "metadata: {name: infer}", 'metadata: {name: infer, annotations: {nvidia.com/mig-1g.10gb: "1"}}'
    )
    err = refusal(text)
    assert err.path == "metadata.annotations.nvidia.com/mig-1g.10gb"
    assert "legacy MIG" in err.message and "never schedules" in err.message
