"""A pod's DRA claims made from ResourceClaimTemplates submitted with it count their GPU requests as whole
GPUs of the pod, as KAI counts them against quota (kai-semantics.md §17; KAI's
pkg/common/resources/dra_gpu_test.go: an exact count, 1 when unset, requests and claims summed); what
muster cannot honour is refused naming the field, never dropped."""

from __future__ import annotations

import pytest
from muster.grouping.errors import ManifestError

from .support import WORKER_SPEC, argo_workflow, group_yaml, only


def template(requests: str, *, version: str = "v1", name: str = "gpus", devices: str = "") -> str:
    """A ResourceClaimTemplate ``name`` whose claim has ``requests`` (YAML flow list)."""
    return f"""
apiVersion: resource.k8s.io/{version}
kind: ResourceClaimTemplate
metadata: {{name: {name}}}
spec:
  spec:
    devices: {{requests: {requests}{devices}}}
"""


def exactly(fields: str, name: str = "gpu") -> str:
    """One v1/v1beta2 request of ``fields`` (YAML flow mapping body) under ``exactly``."""
    return f"[{{name: {name}, exactly: {{{fields}}}}}]"


TWO = template(exactly("deviceClassName: gpu.nvidia.com, allocationMode: ExactCount, count: 2"))
CLAIMS = "[{name: g, resourceClaimTemplateName: gpus}]"
USE = "{claims: [{name: g}]}"


def pytorch(resources: str = USE, claims: str = CLAIMS, annotations: str = "{}", name: str = "train") -> str:
    """A PyTorchJob of two workers whose pod claims ``claims`` and whose container has ``resources``."""
    return f"""
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {{name: {name}, labels: {{kai.scheduler/queue: team}}}}
spec:
  pytorchReplicaSpecs:
    Worker:
      replicas: 2
      template:
        metadata: {{annotations: {annotations}}}
        spec:
          resourceClaims: {claims}
          containers: [{{name: c, image: i, resources: {resources}}}]
"""


def submitted(*docs: str) -> str:
    return "\n---\n".join(docs)


def worker_gpus(*docs: str) -> float:
    [pod] = only(group_yaml(submitted(*docs))).pods
    return pod.resources.gpu


def refusal(*docs: str) -> ManifestError:
    with pytest.raises(ManifestError) as err:
        group_yaml(submitted(*docs))
    return err.value


# -- counting ---------------------------------------------------------------------------------------


def test_a_v1_claims_exact_count_is_the_pods_gpus():
    assert worker_gpus(TWO, pytorch()) == 2


def test_v1beta2_spells_the_request_as_v1_does():
    assert (
        worker_gpus(
            template(exactly("deviceClassName: gpu.nvidia.com, count: 3"), version="v1beta2"), pytorch()
        )
        == 3
    )


def test_v1beta1_writes_the_device_class_and_count_on_the_request_itself():
    v1beta1 = template(
        "[{name: gpu, deviceClassName: gpu.nvidia.com, allocationMode: ExactCount, count: 4}]",
        version="v1beta1",
    )
    assert worker_gpus(v1beta1, pytorch()) == 4


def test_a_request_without_a_count_asks_for_one_gpu():
    assert worker_gpus(template(exactly("deviceClassName: gpu.nvidia.com")), pytorch()) == 1


def test_a_device_class_naming_gpu_in_any_case_is_a_gpu_class():
    assert worker_gpus(template(exactly("deviceClassName: Example-GPU-Class, count: 2")), pytorch()) == 2


def test_the_requests_of_a_claim_and_the_claims_of_a_pod_add_up():
    requests = (
        "[{name: a, exactly: {deviceClassName: gpu.nvidia.com, count: 2}},"
        " {name: b, exactly: {deviceClassName: gpu.nvidia.com}}]"
    )
    claims = "[{name: g, resourceClaimTemplateName: gpus}, {name: h, resourceClaimTemplateName: gpus}]"
    assert worker_gpus(template(requests), pytorch("{claims: [{name: g}, {name: h}]}", claims)) == 6


def test_claimed_gpus_add_to_the_pods_nvidia_gpu_request():
    assert worker_gpus(TWO, pytorch("{limits: {nvidia.com/gpu: 1}, claims: [{name: g}]}")) == 3


def test_a_claim_no_container_names_still_counts_for_the_pod():
    assert worker_gpus(TWO, pytorch("{}")) == 2


def test_a_container_may_name_one_request_of_its_claim():
    assert worker_gpus(TWO, pytorch("{claims: [{name: g, request: gpu}]}")) == 2


def test_a_deployments_pods_carry_their_claimed_gpus():
    deployment = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: serve}
spec:
  replicas: 3
  template:
    spec:
      resourceClaims: [{name: g, resourceClaimTemplateName: gpus}]
      containers: [{name: c, image: i, resources: {claims: [{name: g}]}}]
"""
    groups = group_yaml(submitted(TWO, deployment))
    assert [(p.count, p.resources.gpu) for g in groups for p in g.pods] == [(1, 2)] * 3


# -- refusals -------------------------------------------------------------------------------------

CLAIM0 = f"{WORKER_SPEC}.resourceClaims[0]"
REQUEST0 = "spec.spec.devices.requests[0]"


def test_a_shared_claim_by_name_is_refused_naming_it():
    err = refusal(pytorch(claims="[{name: g, resourceClaimName: shared-gpus}]"))
    assert err.path == f"{CLAIM0}.resourceClaimName"
    assert "shared" in err.message


def test_a_template_the_submission_does_not_hold_is_refused_naming_the_reference():
    err = refusal(pytorch())
    assert err.path == f"{CLAIM0}.resourceClaimTemplateName"
    assert "'gpus'" in err.message and "does not hold" in err.message


def test_a_container_claim_naming_no_claim_of_the_pod_is_refused():
    err = refusal(TWO, pytorch("{claims: [{name: other}]}"))
    assert err.path == f"{WORKER_SPEC}.containers[0].resources.claims[0].name"


def test_a_container_claim_naming_a_request_the_claim_lacks_is_refused():
    err = refusal(TWO, pytorch("{claims: [{name: g, request: nic}]}"))
    assert err.path == f"{WORKER_SPEC}.containers[0].resources.claims[0].request"


@pytest.mark.parametrize(
    ("request_fields", "field"),
    [
        ("deviceClassName: nic.example.com", "exactly.deviceClassName"),
        ("deviceClassName: gpu.nvidia.com, allocationMode: All", "exactly.allocationMode"),
        ("deviceClassName: gpu.nvidia.com, selectors: [{cel: {expression: 'true'}}]", "exactly.selectors"),
        ("deviceClassName: gpu.nvidia.com, adminAccess: true", "exactly.adminAccess"),
        ("deviceClassName: gpu.nvidia.com, tolerations: [{operator: Exists}]", "exactly.tolerations"),
        ("deviceClassName: gpu.nvidia.com, count: 0", "exactly.count"),
        ("deviceClassName: gpu.nvidia.com, count: 100000000", "exactly.count"),
        ("count: 1", "exactly.deviceClassName"),
    ],
)
def test_a_request_muster_cannot_honour_is_refused_naming_its_field(request_fields, field):
    err = refusal(template(exactly(request_fields)), pytorch())
    assert (err.document, err.path) == (0, f"{REQUEST0}.{field}")


def test_first_available_alternatives_are_refused_in_every_version():
    alternatives = "firstAvailable: [{name: big, deviceClassName: gpu.nvidia.com}]"
    for version, request in [
        ("v1", f"[{{name: gpu, {alternatives}}}]"),
        ("v1beta1", f"[{{name: gpu, {alternatives}}}]"),
    ]:
        assert refusal(template(request, version=version), pytorch()).path == f"{REQUEST0}.firstAvailable"


@pytest.mark.parametrize("key", ["constraints", "config"])
def test_a_claims_constraints_and_config_are_refused_naming_them(key):
    devices = f", {key}: [{{requests: [gpu]}}]"
    err = refusal(template(exactly("deviceClassName: gpu.nvidia.com"), devices=devices), pytorch())
    assert err.path == f"spec.spec.devices.{key}"


def test_v1beta1_does_not_read_a_v1_request():
    err = refusal(template(exactly("deviceClassName: gpu.nvidia.com"), version="v1beta1"), pytorch())
    assert err.path == f"{REQUEST0}.exactly"


def test_an_api_version_kai_does_not_read_is_refused():
    err = refusal(template(exactly("deviceClassName: gpu.nvidia.com"), version="v1alpha3"), pytorch())
    assert (err.document, err.path) == (0, "apiVersion")


def test_a_submitted_resource_claim_is_refused_as_shared():
    claim = """
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: shared-gpus}
spec: {devices: {requests: [{name: gpu, exactly: {deviceClassName: gpu.nvidia.com}}]}}
"""
    err = refusal(claim, TWO, pytorch())
    assert (err.document, err.path) == (0, "kind")


@pytest.mark.parametrize("annotation", ["gpu-fraction: '0.5'", "gpu-memory: '4096'"])
def test_a_gpu_claim_beside_a_gpu_share_is_refused_naming_the_annotation(annotation):
    err = refusal(TWO, pytorch(annotations=f"{{{annotation}}}"))
    assert (
        err.path
        == f"spec.pytorchReplicaSpecs.Worker.template.metadata.annotations.{annotation.split(':')[0]}"
    )


def test_a_gpu_claim_beside_mig_instances_is_refused_naming_the_claim():
    err = refusal(TWO, pytorch("{limits: {nvidia.com/mig-1g.10gb: 1}, claims: [{name: g}]}"))
    assert err.path == f"{CLAIM0}.resourceClaimTemplateName"


def test_a_template_submitted_without_a_workload_says_it_travels_with_one():
    err = refusal(TWO)
    assert "ResourceClaimTemplate is read with the workloads that name it" in err.message


def test_an_argo_containers_claim_is_refused_since_its_pod_has_no_claims():
    workflow = argo_workflow(
        "containerSet: {containers: [{name: a, image: i}, {name: b, image: i, resources: {claims: [{name: g}]}}]}"
    )
    assert refusal(workflow).path == "spec.templates[0].containerSet.containers[1].resources.claims"


def test_a_pod_joining_a_submitted_podgroup_carries_its_claimed_gpus():
    podgroup = """
apiVersion: scheduling.run.ai/v2alpha2
kind: PodGroup
metadata: {name: pg}
spec: {queue: team, minMember: 1}
---
apiVersion: v1
kind: Pod
metadata: {name: p, annotations: {pod-group-name: pg}}
spec:
  resourceClaims: [{name: g, resourceClaimTemplateName: gpus}]
  containers: [{name: c, resources: {claims: [{name: g}]}}]
"""
    [pod] = only(group_yaml(submitted(TWO, podgroup))).pods
    assert pod.resources.gpu == 2
