"""The scenario search's cheap filters on each victim prefix (KAI §20, ``accumulated_scenario_filters``):
a prefix they turn down is never simulated, and nothing else changes."""

from __future__ import annotations

import numpy as np
from muster import events as ev
from muster.scenario.load import parse_scenario
from muster.scheduler import topology
from muster.scheduler.actions import solver
from muster.simulate import simulate

from .builders import allocator, gpu_nodes, queue


def simulated_victims(monkeypatch) -> list[set[str]]:
    """The victim jobs of every proposal the solver simulates, in order, from now on."""
    seen: list[set[str]] = []
    real = solver._simulate

    def watched(s, stmt, job, want, victims, why, all_must_move):
        seen.append({u.job.name for u in victims})
        return real(s, stmt, job, want, victims, why, all_must_move)

    monkeypatch.setattr(solver, "_simulate", watched)
    return seen


def one_gpu_victims(*placed: tuple[str, str]) -> list[dict]:
    """Running 1-GPU jobs of team-a, the first listed the newest (so the first victim)."""
    return [
        {"name": name, "queue": "team-a", "submitted_at": len(placed) - i, "pods": [{"resources": {"gpu": 1}}],
         "running": [{"node": node, "gpus": [0]}]}
        for i, (name, node) in enumerate(placed)
    ]  # fmt: skip


def reclaim_scenario(nodes: list[dict], victims: list[dict], pending: dict) -> dict:
    return {
        "name": "prefix-filters",
        "config": {"actions": ["allocate", "reclaim"]},
        "nodes": nodes,
        "queues": [
            {"name": "team-a", "resources": {"gpu": {"quota": 0}}},
            {"name": "team-b", "resources": {"gpu": {"quota": 4}}},
        ],
        "jobs": [*victims, {"queue": "team-b", "submitted_at": 10, **pending}],
    }


def test_a_prefix_that_frees_no_node_the_pending_pod_selects_is_not_simulated(monkeypatch):
    # KAI's AccumulatedNodeAffinities: the first two victims free a GPU each, enough in all, but on zone b,
    # where the pending pod may not go
    nodes = [
        {"name": name, "resources": {"gpu": 1}, "labels": {"zone": zone}}
        for name, zone in (("node-1", "b"), ("node-2", "b"), ("node-x", "a"))
    ]
    victims = one_gpu_victims(("v-1", "node-1"), ("v-2", "node-2"), ("v-x", "node-x"))
    pending = {"name": "p", "pods": [{"resources": {"gpu": 1}, "node_selector": {"zone": "a"}}]}
    seen = simulated_victims(monkeypatch)
    out = simulate(parse_scenario(reclaim_scenario(nodes, victims, pending)))
    assert out.jobs["p"].status == "running"
    assert seen == [{"v-x"}]


def test_a_prefix_without_enough_gpus_in_one_required_domain_is_not_simulated(monkeypatch):
    # KAI's TopologyAwareIdleGpus: once the first pod of the rack gang has v-1's GPU in r1, the prefix
    # [v-3] frees a second GPU, but in r2; [v-3, v-4] gives r2 two (that proposal evicts v-4 and fails),
    # and only v-2 frees r1 for both pods
    nodes = [
        {"name": name, "resources": {"gpu": 1}, "labels": {"rack": rack}}
        for name, rack in (("node-1", "r1"), ("node-2", "r1"), ("node-3", "r2"), ("node-4", "r2"))
    ]
    victims = one_gpu_victims(("v-1", "node-1"), ("v-3", "node-3"), ("v-4", "node-4"), ("v-2", "node-2"))
    pending = {
        "name": "gang",
        "topology": {"required": "rack"},
        "pods": [{"count": 2, "resources": {"gpu": 1}}],
    }
    seen = simulated_victims(monkeypatch)
    out = simulate(parse_scenario(reclaim_scenario(nodes, victims, pending)))
    assert out.jobs["gang"].status == "running"
    assert {e.job for e in out.evictions} == {"v-1", "v-2"}
    assert seen == [{"v-1"}, {"v-1", "v-4"}, {"v-1", "v-2"}]


def sets_job(gpus: list[int]) -> ev.PodGroupCreated:
    """One sub-group set per entry, each required inside one rack, holding one pod of that many GPUs."""
    rack = ev.Topology(required="rack")
    names = [f"set-{i}" for i in range(len(gpus))]
    return ev.PodGroupCreated(
        name="j",
        queue="q",
        min_available=len(gpus),
        subgroups=[
            sg
            for name in names
            for sg in (
                ev.SubGroup(name=name, topology=rack),
                ev.SubGroup(name=f"{name}-pods", parent=name, min_available=1),
            )
        ],
        pods=[
            ev.PodSpec(subgroup=f"{name}-pods", resources=ev.Resources(gpu=g, cpu=1000, memory=2**30))
            for name, g in zip(names, gpus, strict=True)
        ],
    )


def could_hold(rack_gpus: list[int], set_gpus: list[int]) -> bool:
    nodes = [gpu_nodes(1, g, prefix=f"rack{i}", labels={"rack": f"r{i}"}) for i, g in enumerate(rack_gpus)]
    s = allocator(*nodes, queue("q", gpu_quota=64), sets_job(set_gpus))._session(0.0)
    free = np.zeros(s.nodes.ints.shape[0])
    for i, g in enumerate(rack_gpus):
        free[s.state.node_table.nodes[f"rack{i}-0"].slot] = g
    return topology.domains_could_hold(s, s.state.jobs["j"], [0, 1, 2], free)


def test_sets_that_each_fit_some_rack_but_not_all_together_turn_the_prefix_down():
    # KAI's TestTopologyAwareIdleGpus_FragmentedCapacityRejected: racks of 10 and 9, sets of 8, 8 and 3
    assert not could_hold([10, 9], [8, 8, 3])


def test_sets_are_matched_largest_first_to_the_rack_with_most_room_left():
    # with 11 GPUs in the first rack the 3 joins an 8 there
    assert could_hold([11, 9], [8, 8, 3])
