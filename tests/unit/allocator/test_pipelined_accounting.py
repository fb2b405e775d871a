"""A pod pipelined onto releasing devices is its queue's from the cycle that decided it: a cycle that runs
before the binder confirms the move sees the queue holding it, and reclaims no more for that queue."""

from __future__ import annotations

from muster import events as ev

from .builders import allocator, gang_job, gpu_nodes, queue
from .test_evictions import running


def reclaimed_once():
    """team-a borrows all 4 GPUs; team-b (quota 2, weight 0) waits with 3 jobs. The first cycle evicts
    two of team-a's jobs and pipelines two of team-b's onto their devices; nothing is confirmed yet."""
    a_jobs = [gang_job("team-a", 1, name=f"a{i}", submitted_at=i) for i in range(4)]
    b_jobs = [gang_job("team-b", 1, name=f"b{i}", submitted_at=10 + i) for i in range(3)]
    events = [gpu_nodes(1, gpus=4), queue("team-a", gpu_quota=0), queue("team-b", gpu_quota=2, gpu_weight=0)]
    for i, job in enumerate(a_jobs):
        events += [job, *running(job, "node-0", i)]
    a = allocator(events, b_jobs)
    first = a.cycle(1.0, cycle=1)
    for decision in first.decisions:
        a.apply(decision)
    a.apply(first.completed)
    return a, first


def test_the_first_cycle_pipelines_team_bs_quota_onto_evicted_devices():
    _, first = reclaimed_once()
    binds = [d for d in first.decisions if isinstance(d, ev.BindRequested)]
    evictions = [d for d in first.decisions if isinstance(d, ev.EvictionRequested)]
    assert len(binds) == len(evictions) == 2 and all(d.pipelined for d in binds)


def test_a_cycle_before_the_binder_confirms_counts_the_pipelined_pods_as_their_queues():
    a, _ = reclaimed_once()
    status = {s.name: s for s in a.cycle(2.0, cycle=2).queue_status}
    assert status["team-b"].allocated["gpu"] == 2.0


def test_a_cycle_before_the_binder_confirms_reclaims_nothing_more_for_a_queue_at_its_share():
    a, _ = reclaimed_once()
    second = a.cycle(2.0, cycle=2)
    assert second.decisions == []
    assert second.reasons["b2"]
