"""The pipeline-the-whole-job rule on a sub-group tree is checked per leaf (kai-semantics.md §1)."""

from __future__ import annotations

from muster import events as ev

from .builders import GI, allocator, gang_job, gpu_nodes, queue
from .test_evictions import running


def two_leaf_job() -> ev.PodGroupCreated:
    """Leaves x and y of two 1-GPU pods each, both needed; the job's own min_available (2) is display only."""
    spec = ev.Resources(gpu=1, cpu=1000, memory=GI)
    return ev.PodGroupCreated(
        name="tree",
        queue="team-b",
        min_available=2,
        submitted_at=10,
        subgroups=[ev.SubGroup(name="x", min_available=2), ev.SubGroup(name="y", min_available=2)],
        pods=[
            ev.PodSpec(count=2, subgroup="x", resources=spec),
            ev.PodSpec(count=2, subgroup="y", resources=spec),
        ],
    )


def test_a_leaf_placed_on_releasing_devices_below_its_minimum_pipelines_the_whole_job():
    # team-a borrows 2 of 4 GPUs; reclaiming them lets x bind on the idle pair and y only pipeline: y's
    # running pods stay below its minimum, so every pod of the job waits for the releasing devices
    a_jobs = [gang_job("team-a", 1, name=f"a{i}", submitted_at=i) for i in range(2)]
    events = [gpu_nodes(1, gpus=4), queue("team-a", gpu_quota=0), queue("team-b", gpu_quota=4)]
    for i, job in enumerate(a_jobs):
        events += [job, *running(job, "node-0", i)]
    a = allocator(events, two_leaf_job())
    first = a.cycle(1.0, cycle=1)
    binds = [d for d in first.decisions if isinstance(d, ev.BindRequested) and d.job == "tree"]
    assert len(binds) == 4
    assert all(d.pipelined for d in binds)
