"""MIG instances count against quota by their compute slices, and a node's instances are what a MIG pod
may use (kai-semantics.md §17): the profile rule, a pod's GPU quantity, the cluster's total, agent nodes."""

from __future__ import annotations

import msgspec
import pytest
from muster import events as ev
from muster import mig
from muster.scheduler.state import pod_req
from muster.scheduler.state.nodes import NodeTable

from .builders import GI, allocator, confirm, gang_job, queue

AGENT = {"muster.dev/backend": "agent"}


def mig_pod(gpu: float = 0, **extended: int) -> ev.PodSpec:
    instances = {f"nvidia.com/mig-{k}": v for k, v in extended.items()}
    return ev.PodSpec(resources=ev.Resources(gpu=gpu, cpu=1000, extended=instances))


def mig_node(name: str, labels: dict[str, str] | None = None, gpus: int = 0, **instances: int) -> ev.Event:
    extended = {f"nvidia.com/mig-{k}": v for k, v in instances.items()}
    return ev.NodeRegistered(
        node=ev.NodeSpec(
            name=name,
            labels=dict(labels or {}),
            resources=ev.Resources(gpu=gpus, cpu=64_000, memory=512 * GI, extended=extended),
        )
    )


def mig_job(queue_name: str, name: str, profile: str, count: int = 1, **kw) -> ev.PodGroupCreated:
    job = gang_job(queue_name, 1, gpu=0, name=name, **kw)
    return msgspec.structs.replace(job, pods=[mig_pod(**{profile: count})])


# -- the profile rule ------------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "gpus"), [("1g.10gb", 1), ("3g.40gb", 3), ("7g.80gb", 7)])
def test_an_instance_counts_as_many_gpus_as_its_compute_slices(name, gpus):
    assert mig.slices(f"nvidia.com/mig-{name}") == gpus


@pytest.mark.parametrize("name", ["1g.10gb+me", "1c.3g.20gb", "0g.5gb", "3g"])
def test_a_mig_name_that_does_not_say_its_slices_cannot_be_counted(name):
    with pytest.raises(mig.MigError) as err:
        mig.slices(f"nvidia.com/mig-{name}")
    assert err.value.name == f"nvidia.com/mig-{name}"


def test_instances_of_several_profiles_add_up_and_other_resources_count_nothing():
    extended = {"nvidia.com/mig-3g.40gb": 2, "nvidia.com/mig-1g.10gb": 1, "rdma/ib": 4}
    assert mig.gpus(extended) == 7


MIXED = {mig.STRATEGY_LABEL: "mixed"}
SINGLE = {mig.ENABLED_LABEL: "true", mig.STRATEGY_LABEL: "single"}
INSTANCES = {"nvidia.com/mig-1g.10gb": 7}


@pytest.mark.parametrize(
    ("labels", "extended", "asks", "admitted"),
    [
        (MIXED, INSTANCES, mig.MIG, True),
        (MIXED, INSTANCES, mig.REGULAR, False),
        (MIXED, INSTANCES, mig.SHARED, False),
        (MIXED, INSTANCES, mig.CPU_ONLY, True),
        (SINGLE, {}, mig.REGULAR, True),
        (SINGLE, {}, mig.SHARED, False),
        (SINGLE, {}, mig.MIG, False),
        ({}, INSTANCES, mig.REGULAR, True),  # MIG-enabled by its instances, no strategy: anything
        ({}, {}, mig.MIG, False),  # not MIG-enabled
        ({mig.ENABLED_LABEL: "false"}, INSTANCES, mig.MIG, False),  # the label wins over the instances
        ({mig.ENABLED_LABEL: "yes"}, {}, mig.MIG, False),  # Go's ParseBool does not read "yes"
        ({mig.STRATEGY_LABEL: "mixed"}, {}, mig.REGULAR, True),  # a strategy on a node not MIG-enabled
    ],
)
def test_a_nodes_mig_strategy_admits_one_kind_of_gpu_pod(labels, extended, asks, admitted):
    assert mig.node_admits(labels, extended, asks) is admitted


# -- a pod's GPU quantity ---------------------------------------------------------------------------


def test_a_mig_pod_counts_its_instances_slices_as_its_gpus_and_holds_no_device():
    req = pod_req(mig_pod(**{"3g.40gb": 2}), "pods[0]")
    assert req.gpu == 6
    assert req.whole == 0 and req.share == 0
    assert req.ext == (("nvidia.com/mig-3g.40gb", 2),)
    assert req.invalid is None


def test_a_pod_asking_for_mig_instances_and_gpus_is_invalid_naming_the_profile():
    invalid = pod_req(mig_pod(gpu=1, **{"1g.10gb": 1}), "pods[0]").invalid
    assert invalid is not None
    assert invalid.startswith("pods[0].resources.extended['nvidia.com/mig-1g.10gb']")


def test_a_pod_asking_for_a_mig_name_muster_cannot_count_is_invalid():
    assert "expected nvidia.com/mig-<g>g.<m>gb" in pod_req(mig_pod(**{"1g.10gb+me": 1}), "p").invalid


# -- the cluster ------------------------------------------------------------------------------------


def test_the_clusters_gpu_total_counts_mig_capacity_by_slices():
    table = NodeTable()
    table.set(mig_node("a100", **{"1g.10gb": 7}).node)
    table.set(mig_node("h100", **{"3g.40gb": 2, "1g.10gb": 1}).node)
    table.set(mig_node("plain", gpus=8).node)
    assert table.totals()[0] == 7 + 7 + 8


def test_a_queue_is_charged_a_mig_pods_slices_once_it_is_placed():
    a = allocator(
        mig_node("a100", **{"3g.40gb": 2}), queue("team", gpu_quota=8), mig_job("team", "infer", "3g.40gb", 2)
    )
    out = a.cycle(1.0, cycle=1)
    assert [(d.job, d.node, d.gpus) for d in out.decisions if isinstance(d, ev.BindRequested)] == [
        ("infer", "a100", [])
    ]
    confirm(a, out.decisions)
    assert a.snapshot().queues["team"].allocated["gpu"] == 6


# -- agent nodes ------------------------------------------------------------------------------------


def test_an_agent_node_that_declares_no_mig_capacity_takes_no_mig_pod():
    a = allocator(
        mig_node("box", labels=AGENT, gpus=2),
        queue("team", gpu_quota=2),
        mig_job("team", "cmd", "1g.10gb", runtime="command"),
    )
    out = a.cycle(1.0, cycle=1)
    assert not [d for d in out.decisions if isinstance(d, ev.BindRequested)]
    assert "nvidia.com/mig-1g.10gb" in out.reasons["cmd"]


def test_an_agent_node_that_declares_mig_capacity_takes_a_mig_pod():
    a = allocator(
        mig_node("box", labels=AGENT, **{"1g.10gb": 7}),
        queue("team", gpu_quota=2),
        mig_job("team", "cmd", "1g.10gb", runtime="command"),
    )
    out = a.cycle(1.0, cycle=1)
    assert [(d.job, d.node) for d in out.decisions if isinstance(d, ev.BindRequested)] == [("cmd", "box")]


def test_a_job_whose_pod_names_a_mig_profile_muster_cannot_count_waits_saying_why():
    a = allocator(
        mig_node("a100", **{"1g.10gb": 7}), queue("team", gpu_quota=2), mig_job("team", "odd", "1g.10gb+me")
    )
    out = a.cycle(1.0, cycle=1)
    assert not [d for d in out.decisions if isinstance(d, ev.BindRequested)]
    assert out.reasons["odd"].startswith(
        "invalid pod request: pods[0].resources.extended['nvidia.com/mig-1g.10gb+me']"
    )
