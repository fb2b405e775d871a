"""A pod's effective request, as Kubernetes computes it, in muster's base units."""

from __future__ import annotations

import pytest
from muster.grouping.errors import ManifestError
from muster.grouping.podspec import build_pod_spec

from .support import GI, MI


def pod(spec: dict, annotations: dict | None = None):
    return build_pod_spec(spec, annotations or {}, "spec", role="r", count=1, meta_path="metadata").resources


def c(**requests) -> dict:
    return {"name": "c", "resources": {"requests": requests}}


def test_app_containers_are_summed():
    assert pod({"containers": [c(cpu="500m", memory="1Gi"), c(cpu="1.5", memory="512Mi")]}).cpu == 2000


def test_a_limit_alone_counts_as_the_request():
    r = pod({"containers": [{"name": "c", "resources": {"limits": {"cpu": "2", "memory": "1G"}}}]})
    assert (r.cpu, r.memory) == (2000, 10**9)


def test_init_containers_count_by_their_max_not_their_sum():
    r = pod({"containers": [c(cpu="1")], "initContainers": [c(cpu="3"), c(cpu="2")]})
    assert r.cpu == 3000


def test_sidecar_init_containers_add_to_the_app_containers():
    sidecar = {**c(cpu="1"), "restartPolicy": "Always"}
    assert pod({"containers": [c(cpu="1")], "initContainers": [sidecar]}).cpu == 2000


def test_pod_overhead_is_added():
    assert pod({"containers": [c(memory="1Gi")], "overhead": {"memory": "128Mi"}}).memory == GI + 128 * MI


def test_nvidia_gpus_become_devices_and_other_extended_resources_counts():
    r = pod({"containers": [c(**{"nvidia.com/gpu": "2", "rdma/ib": 1, "ephemeral-storage": "10Gi"})]})
    assert (r.gpu, r.extended) == (2.0, {"rdma/ib": 1})


def test_gpu_fraction_annotation_asks_for_a_share_of_one_device():
    assert pod({"containers": [c()]}, {"gpu-fraction": "0.5"}).gpu == 0.5


def test_gpu_memory_annotation_is_mebibytes_of_one_device():
    r = pod({"containers": [c()]}, {"gpu-memory": "2000"})
    assert (r.gpu, r.gpu_memory) == (0.0, 2000 * MI)


@pytest.mark.parametrize("value", ["half", "0", "1.5"])
def test_a_bad_gpu_fraction_names_the_annotation(value):
    with pytest.raises(ManifestError) as err:
        pod({"containers": [c()]}, {"gpu-fraction": value})
    assert err.value.path == "metadata.annotations.gpu-fraction"


def test_an_unparsable_quantity_names_the_container_field():
    with pytest.raises(ManifestError) as err:
        pod({"containers": [c(cpu="1"), c(memory="lots")]})
    assert err.value.path == "spec.containers[1].resources.requests.memory"


def test_a_negative_quantity_is_rejected():
    with pytest.raises(ManifestError, match="negative"):
        pod({"containers": [c(cpu="-1")]})


def test_a_pod_without_containers_is_rejected():
    with pytest.raises(ManifestError) as err:
        pod({"containers": []})
    assert err.value.path == "spec.containers"


def test_node_selector_is_kept():
    spec = build_pod_spec({"containers": [c()], "nodeSelector": {"zone": "a"}}, {}, "spec", role="r", count=2)
    assert (spec.node_selector, spec.count) == ({"zone": "a"}, 2)
