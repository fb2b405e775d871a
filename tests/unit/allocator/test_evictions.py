"""Reclaim, preempt, consolidate and stale-gang eviction as the engine emits them."""

from __future__ import annotations

import math

import pytest
from muster import events as ev
from muster.scheduler.config import AllocatorConfig, FairnessConfig
from muster.scheduler.state import decayed_seconds

from .builders import allocator, confirm, gang_job, gpu_nodes, queue


def running(job: ev.PodGroupCreated, node: str, first_gpu: int = 0, at: float = 0.0) -> list[ev.Event]:
    """Bind every pod of ``job`` on ``node``, one device each from ``first_gpu``."""
    out: list[ev.Event] = []
    n = sum(p.count for p in job.pods)
    for i in range(n):
        out.append(ev.BindRequested(job=job.name, pod=i, node=node, gpus=[first_gpu + i]))
        out.append(ev.PodBound(job=job.name, pod=i, node=node, gpus=[first_gpu + i], at=at))
    return out


def borrowed_cluster(**job_kw):
    """team-a runs 4 single-GPU jobs on a 4-GPU node; team-b (quota 4) waits with a gang of 2."""
    jobs = [gang_job("team-a", 1, name=f"a{i}", submitted_at=i, **job_kw) for i in range(4)]
    events = [gpu_nodes(1, gpus=4), queue("team-a", gpu_quota=0), queue("team-b", gpu_quota=4), *jobs]
    for i, j in enumerate(jobs):
        events += running(j, "node-0", i)
    events.append(gang_job("team-b", 2, name="b", submitted_at=10))
    return events


def evictions(out) -> list[ev.EvictionRequested]:
    return [d for d in out.decisions if isinstance(d, ev.EvictionRequested)]


def test_reclaim_evicts_the_newest_jobs_and_names_the_rule():
    a = allocator(*borrowed_cluster())
    out = a.cycle(1.0, cycle=1)
    evs = evictions(out)
    assert sorted(e.job for e in evs) == ["a2", "a3"]
    assert {(e.action, e.for_job) for e in evs} == {("reclaim", "b")}
    assert all(e.reason.startswith("fair-share reclaim for b: queue team-a") for e in evs)


def test_reclaimers_pods_are_pipelined_behind_the_evictions():
    a = allocator(*borrowed_cluster())
    out = a.cycle(1.0, cycle=1)
    binds = [d for d in out.decisions if isinstance(d, ev.BindRequested)]
    assert [b.job for b in binds] == ["b", "b"] and all(b.pipelined for b in binds)
    kinds = [type(d).__name__ for d in out.decisions]
    assert kinds.index("BindRequested") > max(i for i, k in enumerate(kinds) if k == "EvictionRequested")


def test_min_runtime_blocks_reclaim_and_keeps_the_run_waiting_for_time():
    a = allocator(*borrowed_cluster(), config=AllocatorConfig())
    for job in a.state.jobs.values():
        job.min_runtime = 5.0 if job.queue == "team-a" else None
    a.state.min_runtime_used = True
    assert evictions(a.cycle(1.0, cycle=1)) == []
    assert a.waiting_for_time(1.0)
    assert not a.waiting_for_time(5.0)
    assert len(evictions(a.cycle(5.0, cycle=2))) == 2


def test_a_default_reclaim_min_runtime_alone_blocks_reclaim_until_it_runs_out():
    # no job or queue sets a min-runtime: only the allocator's default protects team-a's jobs
    a = allocator(*borrowed_cluster(), config=AllocatorConfig(default_reclaim_min_runtime=5.0))
    assert evictions(a.cycle(1.0, cycle=1)) == []
    assert a.next_deadline(1.0) == 5.0
    assert len(evictions(a.cycle(5.0, cycle=2))) == 2


def test_a_moved_pod_holds_its_target_until_its_eviction_is_confirmed():
    job = gang_job("team-a", 1, name="t")
    a = allocator(gpu_nodes(2, gpus=1), queue("team-a", gpu_quota=2), job, running(job, "node-0"))
    a.apply(ev.EvictionRequested(job="t", pod=0, node="node-0"))
    a.apply(ev.BindRequested(job="t", pod=0, node="node-1", gpus=[0], pipelined=True))
    snap = a.snapshot()
    assert snap.nodes["node-1"].free["gpu"] == 0.0  # held for the move, nobody else gets it
    a.apply(ev.PodEvicted(job="t", pod=0, node="node-0"))
    a.apply(ev.PodBound(job="t", pod=0, node="node-1", gpus=[0], at=1.0))
    snap = a.snapshot()
    assert snap.jobs["t"].status == "running"
    assert [p.node for p in snap.jobs["t"].pods] == ["node-1"]
    assert snap.nodes["node-0"].free["gpu"] == 1.0


def test_preempt_takes_only_strictly_lower_priority_jobs_in_the_same_queue():
    low = gang_job("team-a", 1, name="low", priority=50)
    same = gang_job("team-a", 1, name="same", priority=75)
    events = [gpu_nodes(1, gpus=2), queue("team-a", gpu_quota=2), low, same]
    events += running(low, "node-0", 0) + running(same, "node-0", 1)
    events.append(gang_job("team-a", 1, name="urgent", priority=75, submitted_at=5))
    out = allocator(*events, actions=("allocate", "preempt")).cycle(1.0, cycle=1)
    assert [(e.job, e.action, e.for_job) for e in evictions(out)] == [("low", "preempt", "urgent")]


def test_consolidation_moves_pods_and_kills_none():
    s1 = gang_job("team-a", 1, name="s1", submitted_at=1)
    s2 = gang_job("team-a", 1, name="s2", submitted_at=2)
    events = [gpu_nodes(2, gpus=2), queue("team-a", gpu_quota=4), s1, s2]
    events += running(s1, "node-0") + running(s2, "node-1")
    events.append(gang_job("team-a", 1, gpu=2, name="big", submitted_at=3))
    a = allocator(*events)
    out = a.cycle(1.0, cycle=1)
    moved = evictions(out)
    assert [(e.action, e.for_job) for e in moved] == [("consolidate", "big")]
    rebinds = [d for d in out.decisions if isinstance(d, ev.BindRequested) and d.job == moved[0].job]
    assert len(rebinds) == 1 and rebinds[0].pipelined
    confirm(a, out.decisions, at=1.0)
    assert {name: v.status for name, v in a.snapshot().jobs.items()} == {
        "big": "running",
        "s1": "running",
        "s2": "running",
    }


def test_consolidation_packs_a_gang_spread_over_two_nodes_onto_one():
    gang = gang_job("team-a", 2, gpu=4, name="gang", submitted_at=1)
    events = [gpu_nodes(2, gpus=8), queue("team-a", gpu_quota=16), gang]
    for pod, node in enumerate(("node-0", "node-1")):
        events.append(ev.BindRequested(job="gang", pod=pod, node=node, gpus=[0, 1, 2, 3]))
        events.append(ev.PodBound(job="gang", pod=pod, node=node, gpus=[0, 1, 2, 3], at=0.0))
    events.append(gang_job("team-a", 1, gpu=8, name="whole", submitted_at=2))
    a = allocator(*events)
    out = a.cycle(1.0, cycle=1)
    assert [(e.job, e.pod, e.action, e.for_job) for e in evictions(out)] == [
        ("gang", 1, "consolidate", "whole"),
        ("gang", 0, "consolidate", "whole"),
    ]
    binds = {(d.job, d.pod): d for d in out.decisions if isinstance(d, ev.BindRequested)}
    assert {binds["gang", 0].node, binds["gang", 1].node} == {"node-0"}
    assert binds["whole", 0].node == "node-1"
    confirm(a, out.decisions, at=1.0)
    assert {name: v.status for name, v in a.snapshot().jobs.items()} == {
        "gang": "running",
        "whole": "running",
    }


def test_a_stale_gang_loses_its_pods_after_the_grace_period():
    gang = gang_job("team-a", 4, name="gang")
    a = allocator(
        gpu_nodes(1, gpus=2), queue("team-a", gpu_quota=2), gang, running_some(gang, 2), stale_gang_grace=10
    )
    a.apply(a.cycle(0.0, cycle=1).completed)
    assert a.waiting_for_time(0.0)
    assert evictions(a.cycle(9.0, cycle=2)) == []
    evs = evictions(a.cycle(10.0, cycle=3))
    assert [(e.job, e.action) for e in evs] == [("gang", "stale_gang_eviction")] * 2


def running_some(job: ev.PodGroupCreated, n: int) -> list[ev.Event]:
    out: list[ev.Event] = []
    for i in range(n):
        out.append(ev.BindRequested(job=job.name, pod=i, node="node-0", gpus=[i]))
        out.append(ev.PodBound(job=job.name, pod=i, node="node-0", gpus=[i], at=0.0))
    return out


def test_decay_weighs_a_second_one_half_life_ago_half():
    h = 100.0
    recent = decayed_seconds(1000.0, -1e9, h, 999.0, 1000.0)
    older = decayed_seconds(1000.0, -1e9, h, 899.0, 900.0)
    assert older / recent == pytest.approx(0.5, rel=1e-6)
    assert decayed_seconds(1000.0, 950.0, 0.0, 0.0, 2000.0) == 50.0
    assert decayed_seconds(1000.0, -1e9, h, 0.0, 1000.0) == pytest.approx(h / math.log(2) * (1 - 2**-10))


def test_time_based_fair_share_is_a_function_of_the_log():
    log = borrowed_cluster()
    config = AllocatorConfig(fairness=FairnessConfig(usage_window=3600, half_life=600, k=1.0))
    a = allocator(*log, config=config)
    outs = []
    for c in range(1, 4):
        out = a.cycle(float(c), cycle=c)
        outs.append(out)
        for e in [*out.decisions, out.completed]:
            a.apply(e)
            log.append(e)
    replayed = allocator(*log, config=config)
    assert replayed.snapshot() == a.snapshot()
    assert replayed.state.queue_usage(3.0, -3597.0, 600) == a.state.queue_usage(3.0, -3597.0, 600)


def test_past_usage_lowers_the_heavy_queues_fair_share():
    def cluster():
        hog = gang_job("team-a", 4, name="hog", min_available=1)
        return [
            gpu_nodes(1, gpus=4),
            queue("team-a", gpu_quota=0),
            queue("team-b", gpu_quota=0),
            hog,
            running(hog, "node-0"),
            gang_job("team-b", 4, name="b", min_available=1),
        ]

    plain = allocator(*cluster())
    timed = allocator(
        *cluster(), config=AllocatorConfig(fairness=FairnessConfig(usage_window=10, half_life=0))
    )
    for a in (plain, timed):
        a.apply(ev.CycleCompleted(cycle=1, watermark=0, clock=10.0))
    assert plain.snapshot().queues["team-a"].fair_share["gpu"] == 2
    assert timed.snapshot().queues["team-a"].fair_share["gpu"] == 0
