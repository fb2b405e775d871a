"""KAI's preferred-level node scores (kai-semantics.md §5.5, ``scheduler/topology.preferred_scores``): which
preferred-level domains are ranked, in what order, and what each rank is worth."""

from __future__ import annotations

import numpy as np
from muster import events as ev

from .builders import allocator, gang_job, gpu_nodes, queue

RACK = ev.Topology(preferred="rack")
ZONES = ev.Topology(name="dc", levels=("zone", "rack"), preferred="rack")


def session_and_job(topology: ev.Topology, *nodes, pods: int = 2):
    a = allocator(*nodes, queue("q", gpu_quota=64), gang_job("q", pods, 1, name="j", topology=topology))
    s = a._session(0.0)
    return s, s.state.jobs["j"]


def rack(name: str, gpus: int, zone: str = "z1") -> list[ev.Event]:
    return gpu_nodes(1, gpus, prefix=name, labels={"zone": zone, "rack": name})


def by_node(s, scores) -> dict[str, float]:
    return {name: float(scores[node.slot]) for name, node in s.state.node_table.nodes.items()}


def test_the_i_th_of_n_preferred_domains_scores_floor_10_i_over_n_hundred_thousands_the_roomiest_last():
    from muster.scheduler.topology import preferred_scores

    s, job = session_and_job(RACK, *rack("r1", 1), *rack("r2", 2), *rack("r3", 3))
    scores = preferred_scores(s, job, [0, 1], RACK)
    assert by_node(s, scores) == {"r1-0": 300_000, "r2-0": 600_000, "r3-0": 1_000_000}


def test_only_the_preferred_domains_under_the_lowest_domain_holding_the_node_set_are_ranked():
    from muster.scheduler.topology import preferred_scores

    s, job = session_and_job(ZONES, *rack("r1", 1), *rack("r2", 2), *rack("r3", 3, zone="z2"))
    zone1 = np.zeros(s.nodes.ints.shape[0], dtype=np.bool_)
    for name in ("r1-0", "r2-0"):
        zone1[s.state.node_table.nodes[name].slot] = True
    scores = by_node(s, preferred_scores(s, job, [0, 1], ZONES, zone1))
    assert (scores["r1-0"], scores["r2-0"]) == (500_000, 1_000_000)


def test_a_node_set_inside_one_preferred_domain_has_no_scores():
    from muster.scheduler.topology import preferred_scores

    s, job = session_and_job(ZONES, *rack("r1", 1), *rack("r2", 2))
    one_rack = np.zeros(s.nodes.ints.shape[0], dtype=np.bool_)
    one_rack[s.state.node_table.nodes["r2-0"].slot] = True
    assert preferred_scores(s, job, [0, 1], ZONES, one_rack) is None


def test_a_constraint_without_a_preferred_level_has_no_scores():
    from muster.scheduler.topology import preferred_scores

    required = ev.Topology(required="rack")
    s, job = session_and_job(required, *rack("r1", 1), *rack("r2", 2))
    assert preferred_scores(s, job, [0, 1], required) is None
