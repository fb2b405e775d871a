"""The batch kernel decides exactly what the reference loops decide.

Two allocators read the same random log, one with the reference loops
(every action with its ``reference`` twin), one with the kernel; every
cycle's outcome must be the same bytes, and so must the state both fold
from it.
"""

from __future__ import annotations

import msgspec
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from muster import events as ev
from muster.scheduler.config import KNOWN_ACTIONS, AllocatorConfig
from muster.scheduler.engine import Allocator

from .reference import ReferenceAllocate, reference

GI = 2**30


def _reference(config: AllocatorConfig) -> Allocator:
    a = Allocator(config)
    a._actions = [reference(x) for x in a._actions]
    assert any(isinstance(x, ReferenceAllocate) for x in a._actions)
    return a


def _cluster(rng: np.random.Generator) -> list[ev.Event]:
    events: list[ev.Event] = []
    for i in range(int(rng.integers(2, 12))):
        gpus = int(rng.choice([0, 1, 2, 4, 8]))
        events.append(
            ev.NodeRegistered(
                node=ev.NodeSpec(
                    name=f"n{int(rng.integers(0, 99)):02d}-{i}",
                    pool=str(rng.choice(["default", "default", "other"])),
                    labels={"rack": f"r{int(rng.integers(0, 3))}", "zone": str(rng.choice(["a", "b"]))},
                    gpu_model=str(rng.choice(["A100", "H100"])) if gpus else None,
                    unschedulable=bool(rng.random() < 0.1),
                    resources=ev.Resources(
                        gpu=gpus,
                        gpu_memory=int(rng.choice([40, 80])) * GI if gpus else 0,
                        cpu=int(rng.choice([8, 16, 64])) * 1000,
                        memory=int(rng.choice([64, 256])) * GI,
                    ),
                )
            )
        )
    names = ["dept", "t1", "t2", "t3", "solo"]
    for order, name in enumerate(names):
        parent = "dept" if name in ("t1", "t2") else None
        res = {
            "gpu": ev.QueueResource(
                quota=float(rng.choice([-1, 0, 1, 2, 4, 8])),
                over_quota_weight=float(rng.choice([0, 1, 2])),
                limit=float(rng.choice([-1, -1, 2, 6, 12])),
            )
        }
        if rng.random() < 0.3:
            res["cpu"] = ev.QueueResource(quota=-1.0, limit=float(rng.choice([4000, 16000, 64000])))
        events.append(
            ev.QueueUpserted(
                queue=ev.QueueSpec(
                    name=name,
                    parent=parent,
                    order=int(rng.integers(0, 3)) if rng.random() < 0.3 else order,
                    priority=int(rng.choice([100, 100, 200])),
                    resources=res,
                )
            )
        )
    return events


def _jobs(rng: np.random.Generator, n: int, tag: str, at: float) -> list[ev.Event]:
    out: list[ev.Event] = []
    for j in range(n):
        pods = int(rng.choice([1, 1, 2, 3, 4]))
        kind = rng.random()
        if kind < 0.5:
            res = ev.Resources(gpu=float(rng.choice([1, 2])), cpu=1000, memory=GI)
        elif kind < 0.65:
            res = ev.Resources(gpu=float(rng.choice([0.25, 0.5])), cpu=500, memory=GI)
        elif kind < 0.8:
            res = ev.Resources(cpu=int(rng.choice([1000, 4000])), memory=2 * GI)
        elif kind < 0.9:
            res = ev.Resources(gpu_memory=int(rng.choice([10, 30])) * GI, cpu=500, memory=GI)
        else:
            res = ev.Resources(gpu=1.5)  # invalid: a fraction above one device
        spec = ev.PodSpec(
            count=pods,
            resources=res,
            node_selector={"zone": "a"} if rng.random() < 0.1 else {},
            gpu_models=["H100"] if rng.random() < 0.1 else [],
            subgroup="",
        )
        specs = [spec]
        subgroups: list[ev.SubGroup] = []
        if rng.random() < 0.1:
            specs = [
                msgspec.structs.replace(spec, subgroup="a"),
                msgspec.structs.replace(spec, subgroup="b", count=1),
            ]
            subgroups = [ev.SubGroup(name="a", min_available=pods), ev.SubGroup(name="b", min_available=1)]
        topology = None
        if rng.random() < 0.1:
            topology = ev.Topology(required="rack") if rng.random() < 0.5 else ev.Topology(preferred="rack")
        priority = int(rng.choice([50, 50, 100, 125]))
        out.append(
            ev.PodGroupCreated(
                name=f"{tag}{int(rng.integers(0, 50)):02d}-{j}",
                queue=str(rng.choice(["t1", "t1", "t2", "t3", "solo", "dept", "ghost"])),
                pool=str(rng.choice(["default", "default", "default", "other"])),
                priority=priority,
                preemptible=priority < 100,
                min_available=int(rng.integers(0, pods + 1)) if rng.random() < 0.3 else pods,
                submitted_at=at + float(rng.integers(0, 5)),
                pods=specs,
                subgroups=subgroups,
                topology=topology,
            )
        )
    return out


def _feed(allocators: list[Allocator], events: list[ev.Event]) -> None:
    for a in allocators:
        for e in events:
            a.apply(e)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from(["binpack", "spread"]), st.permutations(KNOWN_ACTIONS))
def test_the_kernel_and_the_reference_loop_decide_the_same_bytes_cycle_after_cycle(seed, placement, actions):
    rng = np.random.default_rng(seed)
    # allocate first, as configured by default, most of the time; any order now and then
    actions = KNOWN_ACTIONS if rng.random() < 0.7 else tuple(actions)
    config = AllocatorConfig(placement_gpu=placement, placement_cpu=placement, actions=actions)
    fast, reference = Allocator(config), _reference(config)
    both = [fast, reference]
    _feed(both, _cluster(rng) + _jobs(rng, int(rng.integers(5, 40)), "a", 0.0))
    for c in range(1, 5):
        outs = [a.cycle(float(c), cycle=c) for a in both]
        assert msgspec.json.encode(outs[0]) == msgspec.json.encode(outs[1])
        out = outs[0]
        follow: list[ev.Event] = [out.completed, *out.decisions]
        for d in out.decisions:
            if isinstance(d, ev.BindRequested) and rng.random() < 0.9:
                follow.append(
                    ev.PodBound(job=d.job, pod=d.pod, node=d.node, gpus=d.gpus, gpu_share=d.gpu_share, at=c)
                )
            elif isinstance(d, ev.EvictionRequested):
                follow.append(ev.PodEvicted(job=d.job, pod=d.pod, node=d.node))
        snap = fast.snapshot()
        for name in sorted(snap.jobs):
            if snap.jobs[name].status == "running" and rng.random() < 0.2:
                follow.append(ev.PodCompleted(job=name, pod=0, node=snap.jobs[name].pods[0].node, at=c))
        follow += _jobs(rng, int(rng.integers(0, 10)), f"c{c}-", float(c))
        _feed(both, follow)
    assert fast.snapshot() == reference.snapshot()


def test_a_queue_of_plain_jobs_interleaves_with_an_elastic_job_as_the_reference_does():
    events: list[ev.Event] = [
        ev.NodeRegistered(
            node=ev.NodeSpec(name=f"n{i}", resources=ev.Resources(gpu=4, cpu=64000, memory=GI * 64))
        )
        for i in range(3)
    ]
    for name in ("a", "b"):
        events.append(
            ev.QueueUpserted(queue=ev.QueueSpec(name=name, resources={"gpu": ev.QueueResource(quota=4)}))
        )
    spec = ev.PodSpec(count=1, resources=ev.Resources(gpu=1, cpu=1000, memory=GI))
    for j in range(8):
        events.append(ev.PodGroupCreated(name=f"p{j}", queue="ab"[j % 2], submitted_at=j, pods=[spec]))
    elastic = ev.PodSpec(count=6, resources=ev.Resources(gpu=1, cpu=1000, memory=GI))
    events.append(ev.PodGroupCreated(name="e", queue="a", min_available=2, submitted_at=1.5, pods=[elastic]))
    fast, reference = Allocator(AllocatorConfig()), _reference(AllocatorConfig())
    _feed([fast, reference], events)
    out = fast.cycle(0.0, cycle=1)
    assert msgspec.json.encode(out) == msgspec.json.encode(reference.cycle(0.0, cycle=1))
    assert {d.job for d in out.decisions} >= {"e", "p0", "p1"}


def test_reclaimers_of_two_queues_take_turns_as_their_shares_grow():
    # every reclaim raises its queue's share, so the other queue's next job goes first: the kernel must
    # see each change before it pops the next job
    gpu = ev.Resources(gpu=1, cpu=1000, memory=GI)
    events: list[ev.Event] = [
        ev.NodeRegistered(
            node=ev.NodeSpec(name="n0", resources=ev.Resources(gpu=4, cpu=64000, memory=GI * 64))
        )
    ]
    for order, (name, quota) in enumerate((("hog", 0.0), ("a", 2.0), ("c", 2.0))):
        res = {"gpu": ev.QueueResource(quota=quota)}
        events.append(ev.QueueUpserted(queue=ev.QueueSpec(name=name, order=order, resources=res)))
    for j in range(4):
        events.append(
            ev.PodGroupCreated(name=f"hog{j}", queue="hog", submitted_at=j, pods=[ev.PodSpec(resources=gpu)])
        )
    fast, reference = Allocator(AllocatorConfig()), _reference(AllocatorConfig())
    _feed([fast, reference], events)
    first = fast.cycle(0.0, cycle=1)
    assert msgspec.json.encode(first) == msgspec.json.encode(reference.cycle(0.0, cycle=1))
    bound = [first.completed, *first.decisions]
    bound += [ev.PodBound(job=d.job, pod=d.pod, node=d.node, gpus=d.gpus, at=0.0) for d in first.decisions]
    for name, at in (("a1", 1), ("c1", 2), ("a2", 3), ("c2", 4)):
        bound.append(
            ev.PodGroupCreated(name=name, queue=name[0], submitted_at=at, pods=[ev.PodSpec(resources=gpu)])
        )
    _feed([fast, reference], bound)
    out = fast.cycle(1.0, cycle=2)
    assert msgspec.json.encode(out) == msgspec.json.encode(reference.cycle(1.0, cycle=2))
    assert [d.job for d in out.decisions if isinstance(d, ev.BindRequested)] == ["a1", "c1", "a2", "c2"]


def test_without_nodes_every_job_waits_with_the_reference_reasons():
    events: list[ev.Event] = [ev.QueueUpserted(queue=ev.QueueSpec(name="a"))]
    events += [
        ev.PodGroupCreated(
            name=f"j{j}", queue="a", pods=[ev.PodSpec(count=j + 1, resources=ev.Resources(gpu=1))]
        )
        for j in range(3)
    ]
    fast, reference = Allocator(AllocatorConfig()), _reference(AllocatorConfig())
    _feed([fast, reference], events)
    out = fast.cycle(0.0, cycle=1)
    assert msgspec.json.encode(out) == msgspec.json.encode(reference.cycle(0.0, cycle=1))
    assert sorted(out.reasons) == ["j0", "j1", "j2"]
