"""The binder's simulated fleet leaves agent nodes to their agents."""

from __future__ import annotations

from muster import events as ev
from muster.fleet.sim import SimFleet
from muster.store.convert import PodChange, convert


def test_the_sim_fleet_neither_confirms_nor_refuses_binds_to_an_agent_node():
    fleet = SimFleet()
    agent = ev.NodeSpec(name="gpu-box", labels={"muster.dev/backend": "agent"}, resources=ev.Resources(gpu=2))
    fleet.apply(ev.NodeRegistered(node=agent))
    fleet.apply(ev.PodGroupCreated(name="j", queue="q", pods=[ev.PodSpec(resources=ev.Resources(gpu=1))]))
    fleet.apply(ev.BindRequested(job="j", pod=0, node="gpu-box", gpus=[0]))
    assert fleet.step(1.0) == []


def test_a_failed_pod_is_projected_as_failed():
    ops, touched = convert(7, "muster.pods.default", [ev.PodFailed(job="j", pod=1, node="n", exit_code=3)])
    assert ops[1:] == [PodChange("j", 1, "failed", 7, exit_code=3)]
    assert touched == {"j"}
