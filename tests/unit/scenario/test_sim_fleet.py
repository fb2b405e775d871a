"""The simulated fleet confirms decisions and never over-commits."""

from __future__ import annotations

import msgspec
from muster import events as ev
from muster.fleet.sim import SimFleet


def node(name="node-a", gpu=2, gpu_memory=80 * 2**30, cpu=8000, memory=2**34, **extended):
    spec = ev.NodeSpec(
        name=name,
        resources=ev.Resources(gpu=gpu, gpu_memory=gpu_memory, cpu=cpu, memory=memory, extended=extended),
    )
    return ev.NodeRegistered(node=spec)


def group(name, *requests, duration=None):
    pods = [ev.PodSpec(resources=r) for r in requests]
    return ev.PodGroupCreated(name=name, queue="q", pods=pods, duration=duration)


def bind(job, pod=0, gpus=(), node="node-a", pipelined=False):
    return ev.BindRequested(job=job, pod=pod, node=node, gpus=list(gpus), pipelined=pipelined)


def fleet(*events):
    f = SimFleet()
    for e in events:
        f.apply(e)
    return f


def confirm(f, clock=0.0):
    """Step the fleet and read its confirmations back, as the log would."""
    out = f.step(clock)
    for e in out:
        f.apply(e)
    return out


WHOLE = ev.Resources(gpu=1, cpu=1000)
HALF = ev.Resources(gpu=0.5)


def test_a_bind_that_fits_is_confirmed_at_the_clock():
    f = fleet(node(), group("a", WHOLE), bind("a", gpus=[0]))
    (bound,) = confirm(f, clock=3.0)
    assert bound == ev.PodBound(job="a", pod=0, node="node-a", gpus=[0], at=3.0)
    assert [(p.job, p.node, p.gpus) for p in f.bound()] == [("a", "node-a", (0,))]


def test_a_bind_onto_a_taken_device_fails_and_binds_nothing():
    f = fleet(node(), group("a", WHOLE), group("b", WHOLE), bind("a", gpus=[0]), bind("b", gpus=[0]))
    out = confirm(f)
    assert isinstance(out[0], ev.PodBound)
    assert isinstance(out[1], ev.BindFailed) and "device 0" in out[1].reason
    assert [p.job for p in f.bound()] == ["a"]


def test_a_bind_beyond_the_nodes_cpu_fails():
    big = ev.Resources(cpu=6000)
    f = fleet(node(), group("a", big), group("b", big), bind("a"), bind("b"))
    assert [type(e).__name__ for e in confirm(f)] == ["PodBound", "BindFailed"]


def test_a_bind_beyond_an_extended_resource_fails():
    ib = ev.Resources(extended={"rdma/ib": 1})
    f = fleet(node(**{"rdma/ib": 1}), group("a", ib), group("b", ib), bind("a"), bind("b"))
    assert [type(e).__name__ for e in confirm(f)] == ["PodBound", "BindFailed"]


def test_fractions_share_a_device_up_to_a_whole():
    f = fleet(node(), *(group(j, HALF) for j in "abc"), *(bind(j, gpus=[1]) for j in "abc"))
    assert [type(e).__name__ for e in confirm(f)] == ["PodBound", "PodBound", "BindFailed"]


def test_a_fraction_cannot_join_a_whole_pods_device_nor_a_whole_pod_a_shared_one():
    f = fleet(
        node(), group("whole", WHOLE), group("half", HALF), bind("whole", gpus=[0]), bind("half", gpus=[0])
    )
    assert [type(e).__name__ for e in confirm(f)] == ["PodBound", "BindFailed"]
    f = fleet(
        node(), group("half", HALF), group("whole", WHOLE), bind("half", gpus=[0]), bind("whole", gpus=[0])
    )
    assert [type(e).__name__ for e in confirm(f)] == ["PodBound", "BindFailed"]


def test_gpu_memory_pods_share_a_device_by_memory():
    twenty = ev.Resources(gpu_memory=20 * 2**30)
    f = fleet(
        node(gpu_memory=40 * 2**30), *(group(j, twenty) for j in "abc"), *(bind(j, gpus=[0]) for j in "abc")
    )
    out = confirm(f)
    assert [type(e).__name__ for e in out] == ["PodBound", "PodBound", "BindFailed"]
    assert out[0].gpu_share == 0.5


def test_a_whole_pod_must_get_as_many_devices_as_it_asks_for():
    two = ev.Resources(gpu=2)
    f = fleet(node(), group("a", two), bind("a", gpus=[0]))
    assert isinstance(confirm(f)[0], ev.BindFailed)


def test_unknown_nodes_and_unschedulable_nodes_refuse_binds():
    cordoned = ev.NodeRegistered(
        node=ev.NodeSpec(name="node-c", unschedulable=True, resources=ev.Resources(gpu=1))
    )
    f = fleet(
        node(),
        cordoned,
        group("a", WHOLE),
        group("b", ev.Resources(gpu=1)),
        bind("a", node="nowhere"),
        bind("b", gpus=[0], node="node-c"),
    )
    out = confirm(f)
    assert [type(e).__name__ for e in out] == ["BindFailed", "BindFailed"]
    assert "unschedulable" in out[1].reason


def test_evictions_release_before_binds_so_pipelined_binds_land():
    f = fleet(node(gpu=1), group("victim", WHOLE), group("taker", WHOLE), bind("victim", gpus=[0]))
    confirm(f)
    f.apply(ev.EvictionRequested(job="victim", pod=0, node="node-a", action="reclaim", for_job="taker"))
    f.apply(bind("taker", gpus=[0], pipelined=True))
    out = confirm(f, clock=1.0)
    assert out == [
        ev.PodEvicted(job="victim", pod=0, node="node-a"),
        ev.PodBound(job="taker", pod=0, node="node-a", gpus=[0], at=1.0),
    ]


def test_pods_complete_once_their_duration_of_run_time_has_passed():
    f = fleet(node(), group("a", WHOLE, duration=3), bind("a", gpus=[0]))
    confirm(f, clock=1.0)
    assert f.waiting_for_time()
    assert confirm(f, clock=3.5) == []
    assert confirm(f, clock=4.0) == [ev.PodCompleted(job="a", pod=0, node="node-a", at=4.0)]
    assert f.bound() == [] and not f.waiting_for_time()


def test_a_pod_bound_in_the_past_completes_from_its_start():
    f = fleet(
        node(),
        group("a", WHOLE, duration=600),
        bind("a", gpus=[0]),
        ev.PodBound(job="a", pod=0, node="node-a", gpus=[0], at=-1200),
    )
    assert confirm(f, clock=0.0) == [ev.PodCompleted(job="a", pod=0, node="node-a", at=0.0)]


def test_a_recorded_bind_holds_its_resources_without_a_new_confirmation():
    f = fleet(
        node(),
        group("a", WHOLE),
        group("b", WHOLE),
        bind("a", gpus=[0]),
        ev.PodBound(job="a", pod=0, node="node-a", gpus=[0]),
    )
    assert confirm(f) == []
    f.apply(bind("b", gpus=[0]))
    assert isinstance(confirm(f)[0], ev.BindFailed)


def test_a_repeated_bind_request_is_harmless():
    f = fleet(node(), group("a", WHOLE), bind("a", gpus=[0]))
    confirm(f)
    f.apply(bind("a", gpus=[0]))
    assert confirm(f) == []


def test_completions_come_in_due_order_then_by_job_and_pod():
    f = fleet(
        node(gpu=3),
        group("late", WHOLE, duration=2),
        group("b", WHOLE, WHOLE, duration=1),
        bind("late", gpus=[0]),
        bind("b", 1, gpus=[1]),
        bind("b", 0, gpus=[2]),
    )
    confirm(f, clock=0.0)
    assert [(e.job, e.pod) for e in confirm(f, clock=5.0)] == [("b", 0), ("b", 1), ("late", 0)]


def test_removing_a_node_evicts_its_pods():
    f = fleet(node(), group("a", WHOLE), bind("a", gpus=[0]))
    confirm(f)
    f.apply(ev.NodeRemoved(name="node-a"))
    assert confirm(f) == [ev.PodEvicted(job="a", pod=0, node="node-a")]


def test_a_move_whose_pod_finished_before_its_eviction_binds_nothing():
    # the pod completes on its own while a consolidation move (evict, then a pipelined bind) is on its way
    f = fleet(node(gpu=2), group("mover", WHOLE, duration=1), bind("mover", gpus=[0]))
    confirm(f, clock=0.0)
    assert confirm(f, clock=1.0) == [ev.PodCompleted(job="mover", pod=0, node="node-a", at=1.0)]
    f.apply(ev.EvictionRequested(job="mover", pod=0, node="node-a", action="consolidate"))
    f.apply(bind("mover", gpus=[1], pipelined=True))
    out = confirm(f, clock=1.5)
    assert [type(e) for e in out] == [ev.BindFailed]
    assert "finished" in out[0].reason and f.bound() == []


def test_a_job_submitted_again_under_a_finished_jobs_name_binds_afresh():
    f = fleet(node(), group("a", WHOLE, duration=1), bind("a", gpus=[0]))
    confirm(f, clock=0.0)
    confirm(f, clock=1.0)
    f.apply(ev.PodGroupDeleted(name="a"))
    f.apply(group("a", WHOLE))
    f.apply(bind("a", gpus=[0]))
    assert [type(e) for e in confirm(f, clock=2.0)] == [ev.PodBound]


def test_an_eviction_read_together_with_the_bind_of_its_pod_follows_that_bind():
    # The binder read both in one batch: the pod is bound, then evicted, and the pod
    # pipelined onto its device binds once it is gone.
    f = fleet(
        node(gpu=1),
        group("a", WHOLE),
        group("b", WHOLE),
        bind("a", gpus=[0]),
        ev.EvictionRequested(job="a", pod=0, node="node-a"),
        bind("b", gpus=[0], pipelined=True),
    )
    out = confirm(f)
    assert [(type(e).__name__, e.job) for e in out] == [
        ("PodBound", "a"),
        ("PodEvicted", "a"),
        ("PodBound", "b"),
    ]
    assert [p.job for p in f.bound()] == ["b"]


def test_an_eviction_of_a_pod_that_is_not_running_is_answered_all_the_same():
    # Its bind failed; the allocator decided to evict it before reading that.
    f = fleet(node(gpu=1), group("a", WHOLE), group("b", WHOLE), bind("a", gpus=[0]))
    confirm(f)
    f.apply(bind("b", gpus=[0]))
    (failed,) = confirm(f)
    assert isinstance(failed, ev.BindFailed)
    f.apply(ev.EvictionRequested(job="b", pod=0, node="node-a", action="reclaim"))
    assert confirm(f) == [ev.PodEvicted(job="b", pod=0, node="node-a")]
    assert [p.job for p in f.bound()] == ["a"]


def test_an_eviction_of_a_pod_that_finished_is_not_answered():
    f = fleet(node(gpu=1), group("a", WHOLE, duration=1.0), bind("a", gpus=[0]))
    confirm(f, clock=0.0)
    (done,) = confirm(f, clock=2.0)
    assert isinstance(done, ev.PodCompleted)
    f.apply(ev.EvictionRequested(job="a", pod=0, node="node-a", action="reclaim"))
    assert confirm(f, clock=3.0) == []


# -- pods handed over already running -----------------------------------------------------------------


def adopt(*pods, uid="", pool="default", node_name="node-a", started_at=-30.0):
    """AdoptPods of (job, pod, devices) on one node."""
    return ev.AdoptPods(
        pool=pool,
        workload_uid=uid,
        pods=[
            ev.AdoptedPod(job=j, pod=p, node=node_name, gpus=list(g), started_at=started_at)
            for j, p, g in pods
        ],
    )


def test_a_pod_handed_over_running_is_reported_once_its_group_is_read_since_it_started():
    f = fleet(node(), adopt(("a", 0, [1])))
    assert confirm(f, clock=5.0) == []
    f.apply(group("a", WHOLE))
    assert confirm(f, clock=5.0) == [ev.PodBound(job="a", pod=0, node="node-a", gpus=[1], at=-30.0)]
    assert [(p.job, p.gpus, p.started) for p in f.bound()] == [("a", (1,), -30.0)]


def test_a_handover_after_its_group_is_reported_at_once():
    f = fleet(node(), group("a", WHOLE), adopt(("a", 0, [0])))
    assert [type(e) for e in confirm(f)] == [ev.PodBound]


def test_a_handover_waits_for_the_group_of_the_submission_it_names():
    f = fleet(node(), adopt(("a", 0, [0]), uid="scenario/x/2"))
    f.apply(
        ev.PodGroupCreated(
            name="a", queue="q", pods=[ev.PodSpec(resources=WHOLE)], workload_uid="scenario/x/1"
        )
    )
    assert confirm(f) == []
    f.apply(
        ev.PodGroupCreated(
            name="a", queue="q", pods=[ev.PodSpec(resources=WHOLE)], workload_uid="scenario/x/2"
        )
    )
    assert [type(e) for e in confirm(f)] == [ev.PodBound]


def test_shared_pods_handed_over_hold_their_share_of_the_device():
    twenty = ev.Resources(gpu_memory=20 * 2**30)
    f = fleet(node(), group("a", HALF, twenty), adopt(("a", 0, [0]), ("a", 1, [0])))
    assert [e.gpu_share for e in confirm(f)] == [0.5, 0.25]
    f.apply(group("b", HALF))
    f.apply(bind("b", gpus=[0]))
    assert isinstance(confirm(f)[0], ev.BindFailed)


def test_a_pod_handed_over_onto_a_taken_device_is_refused_and_holds_nothing():
    f = fleet(node(), group("a", WHOLE), group("b", WHOLE), bind("a", gpus=[0]), adopt(("b", 0, [0])))
    out = confirm(f)
    assert [type(e) for e in out] == [ev.PodBound, ev.BindFailed]
    assert "device 0" in out[1].reason
    assert [p.job for p in f.bound()] == ["a"]


def test_a_pod_may_keep_running_on_a_cordoned_node():
    cordoned = ev.NodeRegistered(
        node=ev.NodeSpec(name="node-c", unschedulable=True, resources=ev.Resources(gpu=1))
    )
    f = fleet(cordoned, group("a", ev.Resources(gpu=1)), adopt(("a", 0, [0]), node_name="node-c"))
    assert [type(e) for e in confirm(f)] == [ev.PodBound]


def test_a_handover_is_answered_on_the_pool_it_came_from_even_when_refused():
    f = fleet(
        node(),
        group("a", WHOLE),
        adopt(("a", 0, [0]), pool="other"),
        adopt(("a", 0, [0]), node_name="nowhere"),
    )
    (refused,) = confirm(f)
    assert (refused.pool, refused.reason) == ("other", "node node-a is in pool default, not other")
    f = fleet(node(), group("a", WHOLE), adopt(("a", 0, [0]), pool="p2", node_name="nowhere"))
    (refused,) = confirm(f)
    assert (refused.pool, refused.reason) == ("p2", "no node nowhere")


def test_a_pod_on_an_agent_node_is_not_the_fleets_to_report():
    agent = ev.NodeRegistered(
        node=ev.NodeSpec(
            name="gpu-box", labels={"muster.dev/backend": "agent"}, resources=ev.Resources(gpu=1)
        )
    )
    f = fleet(agent, group("a", WHOLE), adopt(("a", 0, [0]), node_name="gpu-box"))
    (refused,) = confirm(f)
    assert isinstance(refused, ev.BindFailed) and "muster agent" in refused.reason


def test_a_pod_handed_over_completes_its_duration_from_its_start():
    f = fleet(node(), group("a", WHOLE, duration=600), adopt(("a", 0, [0]), started_at=-1200.0))
    assert confirm(f, clock=0.0) == [
        ev.PodBound(job="a", pod=0, node="node-a", gpus=[0], at=-1200.0),
        ev.PodCompleted(job="a", pod=0, node="node-a", at=0.0),
    ]


def test_a_fleet_rebuilt_from_the_log_does_not_report_a_handed_over_pod_twice():
    log = [node(), adopt(("a", 0, [0])), group("a", WHOLE)]
    first = fleet(*log)
    log += first.step(0.0)
    rebuilt = fleet(*log)
    assert rebuilt.step(1.0) == []
    assert [(p.job, p.started) for p in rebuilt.bound()] == [("a", -30.0)]


def test_a_pod_the_fleet_already_runs_is_not_adopted_again():
    f = fleet(node(), group("a", WHOLE), bind("a", gpus=[0]))
    confirm(f)
    f.apply(adopt(("a", 0, [1])))
    assert confirm(f) == []


def _runs(runtimes):
    registered = node()
    return ev.NodeRegistered(node=msgspec.structs.replace(registered.node, runtimes=runtimes))


def _of(runtime, name="a"):
    return ev.PodGroupCreated(name=name, queue="q", pods=[ev.PodSpec(resources=WHOLE)], runtime=runtime)


def test_a_command_bound_to_a_simulated_node_fails_instead_of_showing_it_running():
    f = fleet(_runs(["simulated"]), _of("command"), bind("a", gpus=[0]))
    (refused,) = confirm(f)
    assert isinstance(refused, ev.BindFailed)
    assert refused.reason == "node node-a cannot run command pods (it runs simulated pods)"
    assert f.bound() == []


def test_a_node_that_stands_for_a_machine_in_simulation_runs_the_pods_it_declares():
    f = fleet(_runs(["command", "image"]), _of("command"), _of("image", "b"), bind("a", gpus=[0]))
    f.apply(bind("b", gpus=[1]))
    assert [type(e) for e in confirm(f)] == [ev.PodBound, ev.PodBound]


def test_a_group_from_before_runtimes_binds_on_any_node_as_it_did():
    f = fleet(_runs(["command"]), group("a", WHOLE), bind("a", gpus=[0]))
    assert [type(e) for e in confirm(f)] == [ev.PodBound]
