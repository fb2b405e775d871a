"""A pod runs only on a node that runs its kind: the rule, and every way the allocator places a pod."""

from __future__ import annotations

import pytest
from muster import events as ev
from muster import runtimes
from muster.scheduler.state import ClusterState, pod_req
from muster.scheduler.state.nodes import NodeTable

from .builders import allocator, gang_job, gpu_nodes, queue
from .test_evictions import borrowed_cluster, evictions, running

AGENT = {"muster.dev/backend": "agent"}
ZONE_A = {"zone": "a"}
NO_COMMAND_NODE = (
    "no node can run command pods: the cluster has simulated nodes only; "
    "`muster agent` on a machine adds a node that runs them"
)


def binds(out) -> set[tuple[str, int, str]]:
    return {(d.job, d.pod, d.node) for d in out.decisions if isinstance(d, ev.BindRequested)}


def spec(**kw) -> ev.NodeSpec:
    return ev.NodeSpec(name="n", **kw)


# -- the rule ------------------------------------------------------------------------------------


def test_a_node_runs_the_kinds_it_declares_and_no_other():
    node = spec(runtimes=["command", "image"])
    assert runtimes.can_run(node, "command") and runtimes.can_run(node, "image")
    assert not runtimes.can_run(node, "simulated")


def test_a_node_that_declares_nothing_runs_what_its_backend_runs():
    assert runtimes.node_runtimes(spec(labels=AGENT)) == ("command",)
    assert runtimes.node_runtimes(spec()) == ("simulated",)


def test_a_group_from_before_runtimes_may_use_every_node():
    for node in (spec(), spec(labels=AGENT), spec(runtimes=["image"])):
        assert runtimes.can_run(node, runtimes.ANY)


def test_a_runtime_no_node_knows_runs_nowhere():
    assert not runtimes.can_run(spec(runtimes=list(runtimes.RUNTIMES)), "wasm")


def test_the_nodes_a_pod_may_use_are_those_that_run_its_kind():
    table = NodeTable()
    for e in [*gpu_nodes(1, prefix="sim"), *gpu_nodes(1, prefix="agent", runtimes=["command"])]:
        table.set(e.node)

    def usable(runtime: str) -> list[str]:
        mask = table.eligible("default", pod_req(ev.PodSpec(), "pods[0]", runtime).spec_key)
        return sorted(name for name, node in table.nodes.items() if mask[node.slot])

    assert usable("command") == ["agent-0"]
    assert usable("simulated") == ["sim-0"]
    assert usable("") == ["agent-0", "sim-0"]


# -- allocate, in the batch kernel and in Python ----------------------------------------------------

# Binpack fills the fuller node first: the 2-GPU machine, unless the rule keeps a pod off it.
MIXED = [
    *gpu_nodes(1, gpus=4, prefix="sim"),
    *gpu_nodes(1, gpus=2, prefix="agent", runtimes=["command"]),
    queue("team", gpu_quota=8),
]


def test_each_job_goes_to_a_node_of_its_kind_where_binpack_alone_would_not_put_it():
    out = allocator(
        MIXED,
        gang_job("team", 2, name="sim-train", runtime="simulated"),
        gang_job("team", 1, name="cmd", runtime="command", submitted_at=1),
    ).cycle(0.0, cycle=1)
    assert binds(out) == {("sim-train", 0, "sim-0"), ("sim-train", 1, "sim-0"), ("cmd", 0, "agent-0")}


def test_an_elastic_job_placed_pod_by_pod_keeps_to_nodes_of_its_kind():
    out = allocator(MIXED, gang_job("team", 3, min_available=1, name="cmd", runtime="command")).cycle(
        0.0, cycle=1
    )
    assert binds(out) == {("cmd", 0, "agent-0"), ("cmd", 1, "agent-0")}


def test_a_job_from_an_old_log_is_placed_as_it_was_whatever_its_nodes_run():
    out = allocator(MIXED, gang_job("team", 2, name="old")).cycle(0.0, cycle=1)
    assert binds(out) == {("old", 0, "agent-0"), ("old", 1, "agent-0")}


def test_a_job_no_node_can_run_waits_and_says_so():
    out = allocator(
        gpu_nodes(2, gpus=4), queue("team", gpu_quota=8), gang_job("team", 1, name="cmd", runtime="command")
    ).cycle(0.0, cycle=1)
    assert binds(out) == set()
    assert out.reasons["cmd"] == NO_COMMAND_NODE


def test_in_a_pool_of_its_own_the_reason_names_the_pool():
    out = allocator(
        gpu_nodes(1, pool="west"),
        queue("team", gpu_quota=8),
        gang_job("team", 1, name="img", runtime="image", pool="west"),
    ).cycle(0.0, cycle=1)
    assert out.reasons["img"].startswith("no node can run image pods: pool west has simulated nodes only")


def test_jobs_alike_but_for_their_kind_do_not_share_a_failed_shape():
    out = allocator(
        gpu_nodes(1, gpus=4),
        queue("team", gpu_quota=8),
        gang_job("team", 1, name="a-cmd", runtime="command"),
        gang_job("team", 1, name="b-sim", runtime="simulated", submitted_at=1),
    ).cycle(0.0, cycle=1)
    assert binds(out) == {("b-sim", 0, "node-0")}
    assert out.reasons["a-cmd"] == NO_COMMAND_NODE


def test_a_gpu_job_on_a_cluster_without_gpus_is_told_there_are_none():
    out = allocator(
        gpu_nodes(2, gpus=0), queue("team", gpu_quota=8), gang_job("team", 2, name="train")
    ).cycle(0.0, cycle=1)
    assert out.reasons["train"] == "the cluster has no GPUs (each pod needs 1 gpu, 1 cpu, 1Gi memory)"


def test_no_gpus_in_the_cluster_is_said_before_what_the_job_selects():
    out = allocator(
        gpu_nodes(1, gpus=0),
        queue("team", gpu_quota=8),
        gang_job("team", 1, name="train", node_selector={"zone": "b"}),
    ).cycle(0.0, cycle=1)
    assert out.reasons["train"].startswith("the cluster has no GPUs")


def test_a_restored_state_still_knows_what_each_pod_is():
    state = ClusterState()
    state.apply(gang_job("team", 1, name="cmd", runtime="command"))
    restored = ClusterState.restore(state.image())
    assert restored.jobs["cmd"].pods[0].runtime == "command"


# -- the actions that evict, and the solver that moves victims ---------------------------------------


@pytest.mark.parametrize(("runtime", "evicted"), [("command", []), ("simulated", ["low"])])
def test_preempt_evicts_only_for_a_job_some_node_can_run(runtime, evicted):
    low = gang_job("team", 2, name="low", priority=50, runtime="simulated")
    events = [gpu_nodes(1, gpus=2), queue("team", gpu_quota=2), low, *running(low, "node-0")]
    events.append(gang_job("team", 1, name="urgent", priority=75, submitted_at=5, runtime=runtime))
    out = allocator(*events, actions=("allocate", "preempt")).cycle(1.0, cycle=1)
    assert sorted({e.job for e in evictions(out)}) == evicted


@pytest.mark.parametrize(("runtime", "evicts"), [("command", False), ("simulated", True)])
def test_reclaim_evicts_only_for_a_job_some_node_can_run(runtime, evicts):
    events = borrowed_cluster(runtime="simulated")
    events[-1] = gang_job("team-b", 2, name="b", submitted_at=10, runtime=runtime)
    out = allocator(*events, actions=("allocate", "reclaim")).cycle(1.0, cycle=1)
    assert bool(evictions(out)) is evicts


def test_a_victim_is_moved_only_to_a_node_of_its_kind():
    # The urgent command selects the agent's machine; the victim would fit on the idle simulated node,
    # but is a command too, so it is stopped, not moved there.
    low = gang_job("team", 1, name="low", priority=50, runtime="command")
    urgent = gang_job(
        "team", 1, gpu=2, name="urgent", priority=75, submitted_at=5, runtime="command", node_selector=ZONE_A
    )
    events = [
        *gpu_nodes(1, gpus=2, prefix="agent", runtimes=["command"], labels=ZONE_A),
        *gpu_nodes(1, gpus=2, prefix="sim"),
        queue("team", gpu_quota=4),
        low,
        *running(low, "agent-0"),
        urgent,
    ]
    out = allocator(*events, actions=("allocate", "preempt")).cycle(1.0, cycle=1)
    assert [(e.job, e.for_job) for e in evictions(out)] == [("low", "urgent")]
    assert "moved" not in evictions(out)[0].reason
    assert binds(out) == {("urgent", 0, "agent-0")}


def test_consolidation_never_moves_a_pod_to_a_node_that_cannot_run_it():
    # Moving c1 to the idle simulated node would free the first machine for big; nothing else would.
    c1 = gang_job("team", 1, name="c1", runtime="command", submitted_at=1)
    c2 = gang_job("team", 1, gpu=2, name="c2", runtime="command", submitted_at=2)
    big = gang_job("team", 1, gpu=2, name="big", runtime="command", submitted_at=3, node_selector=ZONE_A)
    events = [
        *gpu_nodes(2, gpus=2, prefix="agent", runtimes=["command"], labels=ZONE_A),
        *gpu_nodes(1, gpus=2, prefix="sim"),
        queue("team", gpu_quota=8),
        c1,
        c2,
        *running(c1, "agent-0"),
        ev.BindRequested(job="c2", pod=0, node="agent-1", gpus=[0, 1]),
        ev.PodBound(job="c2", pod=0, node="agent-1", gpus=[0, 1]),
        big,
    ]
    out = allocator(*events, actions=("allocate", "consolidate")).cycle(1.0, cycle=1)
    assert evictions(out) == [] and binds(out) == set()
    assert out.reasons["big"].startswith("pod does not fit")
