"""Nested topology constraints (kai-semantics.md §14.5, ``scheduler/topology.place_in_topology``): what
a job whose sub-group fits no domain of its own is told. Where the pods go is in the scenarios
``tests/scenarios/topology-subgroup-*``."""

from __future__ import annotations

from muster import events as ev

from .builders import GI, allocator, gpu_nodes, queue

RACK = ev.Topology(name="dc", levels=("zone", "rack"), required="rack")
ZONE = ev.Topology(name="dc", levels=("zone", "rack"), required="zone")


def nested_job(topology: ev.Topology | None = None) -> ev.PodGroupCreated:
    """Leaf solo (one pod, no constraint of its own) and leaf tp (two pods in one rack), 1 GPU each."""
    spec = ev.Resources(gpu=1, cpu=1000, memory=GI)
    return ev.PodGroupCreated(
        name="j",
        queue="q",
        min_available=3,
        topology=topology,
        subgroups=[
            ev.SubGroup(name="solo", min_available=1),
            ev.SubGroup(name="tp", min_available=2, topology=RACK),
        ],
        pods=[
            ev.PodSpec(count=1, subgroup="solo", resources=spec),
            ev.PodSpec(count=2, subgroup="tp", resources=spec),
        ],
    )


def one_gpu_racks(*racks: str) -> list[ev.Event]:
    return [e for r in racks for e in gpu_nodes(1, 1, prefix=f"n-{r}", labels={"zone": "z1", "rack": r})]


def test_a_job_whose_sub_group_fits_no_domain_of_its_own_waits_naming_the_sub_group():
    # three racks of one GPU: room for the job's three pods, but no rack holds both of tp's
    a = allocator(one_gpu_racks("r1", "r2", "r3"), queue("q", gpu_quota=8), nested_job())
    out = a.cycle(1.0, cycle=1)
    assert not [d for d in out.decisions if isinstance(d, ev.BindRequested)]
    assert out.reasons["j"] == "no rack domain has room for all 2 pods of sub-group 'tp'"


def test_under_the_jobs_own_constraint_the_reason_names_the_job_and_what_failed_inside():
    a = allocator(one_gpu_racks("r1", "r2", "r3"), queue("q", gpu_quota=8), nested_job(ZONE))
    out = a.cycle(1.0, cycle=1)
    assert out.reasons["j"] == (
        "no zone domain has room for all 3 pods of the job; "
        "in the last one tried, no rack domain has room for all 2 pods of sub-group 'tp'"
    )
