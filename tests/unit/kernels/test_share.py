"""A pod's kind and its share of one device: one rule for the kernels, the fleet and the allocator."""

import numpy as np
import pytest
from muster import events as ev
from muster.fleet.sim import SimFleet
from muster.kernels import placement as pl
from muster.kernels.share import (
    CPU_ONLY,
    FRACTION,
    MEMORY,
    UNKNOWN_SHARE,
    WHOLE,
    device_share,
    pod_kind,
)
from muster.scheduler.state import pod_req

GI = 2**30
DEVICE = 80 * GI


def test_a_fraction_holds_its_fraction_of_any_device():
    assert pod_kind(0.25, 0) == FRACTION
    assert device_share(FRACTION, 0.25, 0, DEVICE) == 0.25
    assert device_share(FRACTION, 0.25, 0, 0) == 0.25


def test_gpu_memory_holds_memory_over_the_devices_memory():
    assert pod_kind(0, 20 * GI) == MEMORY
    assert device_share(MEMORY, 0.0, 20 * GI, DEVICE) == 0.25
    assert device_share(MEMORY, 0.0, 20 * GI, 40 * GI) == 0.5


def test_gpu_memory_share_is_unknown_on_a_node_without_device_memory():
    assert device_share(MEMORY, 0.0, 20 * GI, 0) == UNKNOWN_SHARE


def test_whole_gpus_and_cpu_only_pods_hold_no_share_of_a_device():
    assert pod_kind(2, 0) == WHOLE
    assert pod_kind(1.0, 0) == WHOLE
    assert pod_kind(0, 0) == CPU_ONLY
    assert device_share(WHOLE, 2.0, 0, DEVICE) == 0.0
    assert device_share(CPU_ONLY, 0.0, 0, DEVICE) == 0.0


@pytest.mark.parametrize("gpu", [0.5, 1.0, 2.0])
def test_asking_for_both_gpu_and_gpu_memory_is_refused(gpu):
    with pytest.raises(ValueError, match="either gpu or gpu_memory, not both"):
        pod_kind(gpu, 20 * GI)


def test_a_non_integral_multi_gpu_request_is_refused():
    with pytest.raises(ValueError, match="whole number"):
        pod_kind(1.5, 0)


# -- the fleet and the allocator agree ----------------------------------------------------------


def _fleet_with(request: ev.Resources) -> SimFleet:
    f = SimFleet()
    spec = ev.NodeSpec(
        name="node-a", resources=ev.Resources(gpu=1, gpu_memory=DEVICE, cpu=8000, memory=2**34)
    )
    f.apply(ev.NodeRegistered(node=spec))
    f.apply(ev.PodGroupCreated(name="a", queue="q", pods=[ev.PodSpec(resources=request)]))
    return f


def _placed_share(request: ev.Resources) -> float:
    """The share the placement kernel gives the pod on a one-device node like ``_fleet_with``'s."""
    req = pod_req(ev.PodSpec(resources=request), "pods[0]")
    nodes = pl.empty_nodes(1, 1)
    nodes.ints[0, [pl.N_GPUS, pl.N_DEV_MEM, pl.N_CPU_CAP, pl.N_MEM_CAP]] = (1, DEVICE, 8000, 2**34)
    ints = np.array([[req.kind, req.whole, req.gpu_memory, req.cpu, req.memory, 0]], dtype=np.int64)
    pods = pl.PodArrays(ints, np.array([req.share]), np.zeros((1, 0), np.int64), np.ones((1, 1), np.bool_))
    placed = pl.place(nodes, pods)
    assert placed.count == 1
    return float(placed.share[0])


@pytest.mark.parametrize(
    "request_", [ev.Resources(gpu=0.25), ev.Resources(gpu_memory=20 * GI)], ids=["fraction", "memory"]
)
def test_the_fleet_holds_the_share_the_placement_kernel_gave(request_):
    f = _fleet_with(request_)
    f.apply(ev.BindRequested(job="a", pod=0, node="node-a", gpus=[0]))
    (bound,) = f.step(0.0)
    assert isinstance(bound, ev.PodBound)
    f.apply(bound)
    (pod,) = f.bound()
    assert pod.share == _placed_share(request_) == 0.25


def test_a_pod_asking_for_both_gpu_and_gpu_memory_is_refused_by_the_allocator_and_the_fleet():
    both = ev.Resources(gpu=0.5, gpu_memory=20 * GI)
    assert "not both" in (pod_req(ev.PodSpec(resources=both), "pods[0]").invalid or "")
    f = _fleet_with(both)
    f.apply(ev.BindRequested(job="a", pod=0, node="node-a", gpus=[0]))
    (failed,) = f.step(0.0)
    assert isinstance(failed, ev.BindFailed)
    assert "not both" in failed.reason
    assert f.bound() == []
