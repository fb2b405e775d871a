"""The candidate domains of a topology-constrained job (kai-semantics.md §5.5, ``scheduler/topology``):
which levels are tried and in what order, and KAI's per-node capacity test for alike pods."""

from __future__ import annotations

from muster import events as ev

from .builders import allocator, gang_job, gpu_nodes, queue

DC = ev.Topology(name="dc", levels=("zone", "rack", "host"), required="zone", preferred="host")


def session_and_job(topology: ev.Topology, *nodes, pods: int = 2, gpu: float = 1):
    a = allocator(*nodes, queue("q", gpu_quota=64), gang_job("q", pods, gpu, name="j", topology=topology))
    s = a._session(0.0)
    return s, s.state.jobs["j"]


def labelled(zone: str, rack: str, host: str, gpus: int = 8) -> list[ev.Event]:
    return gpu_nodes(1, gpus, prefix=host, labels={"zone": zone, "rack": rack, "host": host})


def test_levels_run_from_the_preferred_one_up_to_the_required_one():
    from muster.scheduler.topology import levels_to_try

    s, job = session_and_job(DC, labelled("z1", "r1", "h1"))
    assert levels_to_try(job.topology) == [2, 1, 0]


def test_with_only_a_preferred_level_the_whole_topology_comes_last():
    from muster.scheduler.topology import ROOT, levels_to_try

    only_preferred = ev.Topology(name="dc", levels=("zone", "rack", "host"), preferred="rack")
    s, job = session_and_job(only_preferred, labelled("z1", "r1", "h1"))
    assert levels_to_try(job.topology) == [1, 0, ROOT]


def test_a_domain_whose_nodes_cannot_each_hold_a_whole_pod_is_no_candidate_though_its_sums_suffice():
    from muster.scheduler.topology import candidate_masks

    rack = ev.Topology(required="rack")
    # rack r1: two nodes of 3 GPUs (6 in all, no node holds a 4-GPU pod); rack r2: one node of 4
    nodes = [
        *gpu_nodes(2, 3, prefix="small", labels={"rack": "r1"}),
        *gpu_nodes(1, 4, prefix="big", labels={"rack": "r2"}),
    ]
    s, job = session_and_job(rack, *nodes, pods=1, gpu=4)
    (only,) = candidate_masks(s, job, [0])
    big = s.state.node_table.nodes["big-0"].slot
    assert only[1] is not None and list(only[1].nonzero()[0]) == [big]
