"""The agent's decisions as a function of the log and its processes (no processes, no bus)."""

from __future__ import annotations

import dataclasses

from muster import events as ev
from muster.agent.plan import Forget, Local, NodeLog, Start, Stop, decide

NODE = "node-a"


def command_job(name: str = "train", count: int = 1, grace: float | None = None) -> ev.PodGroupCreated:
    pod = ev.PodSpec(count=count, resources=ev.Resources(gpu=1), command=["sleep", "60"], grace_period=grace)
    return ev.PodGroupCreated(name=name, queue="team", pods=[pod], min_available=count)


def bind(
    job: str = "train", pod: int = 0, node: str = NODE, gpus=(0,), pipelined: bool = False
) -> ev.BindRequested:
    return ev.BindRequested(job=job, pod=pod, node=node, gpus=list(gpus), pipelined=pipelined)


def log_of(*events: ev.Event) -> NodeLog:
    log = NodeLog(NODE)
    for seq, event in enumerate(events, start=1):
        log.apply(event, seq)
    return log


def running(job: str = "train", pod: int = 0, seq: int = 2, gpus=(0,), **kw) -> dict:
    return {(job, pod): Local(key=(job, pod), seq=seq, gpus=tuple(gpus), share=0.0, **kw)}


def act(log: NodeLog, local: dict) -> list:
    return decide(log, local, clock=10.0, default_grace=30.0)


def test_a_bind_to_this_node_starts_the_pod_with_its_rank_and_world_size():
    (start,) = act(log_of(command_job(count=2), bind(pod=1)), {})
    assert isinstance(start, Start)
    assert (start.run.pod, start.run.world_size, start.run.spec.command) == (1, 2, ["sleep", "60"])
    assert start.seq == 2


def test_a_bind_to_another_node_is_not_this_agents_business():
    assert act(log_of(command_job(), bind(node="node-b")), {}) == []


def test_a_started_pod_is_reported_bound_until_the_log_says_so():
    log = log_of(command_job(), bind())
    (report,) = act(log, running())
    assert isinstance(report.event, ev.PodBound) and report.event.gpus == [0]
    log.apply(report.event, 3)
    assert act(log, running()) == []


def test_an_ended_pod_is_reported_completed_on_exit_zero_and_failed_otherwise():
    log = log_of(command_job(), bind(), ev.PodBound(job="train", pod=0, node=NODE, gpus=[0]))
    (done,) = act(log, running(exit_code=0))
    assert isinstance(done.event, ev.PodCompleted)
    (failed,) = act(log, running(exit_code=3))
    assert isinstance(failed.event, ev.PodFailed) and failed.event.exit_code == 3
    assert failed.event.reason == "exited with code 3"


def test_an_ended_pod_is_forgotten_once_the_log_has_its_end():
    log = log_of(command_job(), bind(), ev.PodCompleted(job="train", pod=0, node=NODE))
    assert act(log, running(exit_code=0)) == [Forget(("train", 0))]


def test_an_eviction_stops_the_pod_with_its_grace_period_and_then_reports_it_evicted():
    log = log_of(
        command_job(grace=7),
        bind(),
        ev.PodBound(job="train", pod=0, node=NODE),
        ev.EvictionRequested(job="train", pod=0, node=NODE),
    )
    assert act(log, running()) == [Stop(("train", 0), 7)]
    assert act(log, running(stopping=True)) == []
    (report,) = act(log, running(exit_code=-15))
    assert isinstance(report.event, ev.PodEvicted)


def test_a_pipelined_bind_waits_until_the_evicted_pod_is_gone():
    log = log_of(
        command_job("victim"), command_job("owner"), bind("victim"), ev.PodBound(job="victim", pod=0, node=NODE),
        ev.EvictionRequested(job="victim", pod=0, node=NODE), bind("owner", pipelined=True),
    )  # fmt: skip
    victim = running("victim", seq=3)
    assert [type(a) for a in act(log, victim)] == [Stop]
    assert act(log, {("victim", 0): dataclasses.replace(victim["victim", 0], stopping=True)}) == []
    log.apply(ev.PodEvicted(job="victim", pod=0, node=NODE), 7)
    assert [type(a) for a in act(log, {})] == [Start]


def test_a_process_of_an_earlier_placement_is_stopped_before_the_pod_starts_again():
    log = log_of(command_job(), bind(), ev.PodEvicted(job="train", pod=0, node=NODE), bind(gpus=(1,)))
    old = running(seq=2)
    assert act(log, old) == [Stop(("train", 0), 30.0)]
    assert act(log, running(seq=2, exit_code=-15)) == [Forget(("train", 0))]
    assert [type(a) for a in act(log, {})] == [Start]


def test_a_pod_the_log_says_runs_here_but_no_process_does_is_reported_evicted():
    log = log_of(command_job(), bind(), ev.PodBound(job="train", pod=0, node=NODE))
    (report,) = act(log, {})
    assert isinstance(report.event, ev.PodEvicted)


def test_a_pod_that_ended_unseen_while_the_agent_was_away_is_reported_evicted():
    log = log_of(command_job(), bind(), ev.PodBound(job="train", pod=0, node=NODE))
    (report,) = act(log, running(exit_code=None, requeue=True))
    assert isinstance(report.event, ev.PodEvicted)


def test_a_deleted_job_is_stopped_and_reported_evicted_and_its_unstarted_pods_never_start():
    log = log_of(
        command_job(count=2),
        bind(pod=0),
        bind(pod=1, gpus=(1,)),
        ev.PodBound(job="train", pod=0, node=NODE),
        ev.PodGroupDeleted(name="train"),
    )
    assert act(log, running()) == [Stop(("train", 0), 30.0)]
    (report,) = act(log, running(exit_code=-15))
    assert isinstance(report.event, ev.PodEvicted)


def test_a_job_without_a_command_fails_instead_of_starting():
    job = ev.PodGroupCreated(name="plain", queue="team", pods=[ev.PodSpec(resources=ev.Resources(gpu=1))])
    (report,) = act(log_of(job, bind("plain")), {})
    assert isinstance(report.event, ev.PodFailed) and "no command" in report.event.reason


def test_a_move_of_a_pod_that_finished_on_its_old_node_starts_nothing_here():
    log = log_of(
        command_job(),
        bind(node="node-b"),
        ev.PodCompleted(job="train", pod=0, node="node-b"),
        bind(pipelined=True),  # the move's second half, decided before the completion was read
    )
    assert act(log, {}) == []


def test_an_eviction_of_a_pod_whose_bind_failed_here_is_answered_evicted_until_the_log_has_it():
    log = log_of(
        command_job(),
        bind(),
        ev.BindFailed(job="train", pod=0, node=NODE, reason="node lost"),
        ev.EvictionRequested(job="train", pod=0, node=NODE, action="reclaim"),  # decided before that was read
    )
    (report,) = act(log, {})
    assert report.event == ev.PodEvicted(job="train", pod=0, node=NODE) and report.seq == 4
    log.apply(report.event, 5)
    assert act(log, {}) == []


def test_an_eviction_of_a_pod_that_finished_is_not_answered():
    log = log_of(
        command_job(),
        bind(),
        ev.PodCompleted(job="train", pod=0, node=NODE),
        ev.EvictionRequested(job="train", pod=0, node=NODE, action="reclaim"),
    )
    assert act(log, {}) == []


def test_a_pod_moving_here_starts_only_once_the_node_it_leaves_has_let_it_go():
    log = log_of(
        command_job(), bind(node="node-b"), ev.PodBound(job="train", pod=0, node="node-b"),
        ev.EvictionRequested(job="train", pod=0, node="node-b"), bind(gpus=(1,), pipelined=True),
    )  # fmt: skip
    assert act(log, {}) == []
    log.apply(ev.PodEvicted(job="train", pod=0, node="node-b"), 6)
    assert [type(a) for a in act(log, {})] == [Start]


def test_a_pod_that_ended_on_the_node_it_was_moving_from_never_starts_here():
    log = log_of(
        command_job(), bind(node="node-b"), ev.PodBound(job="train", pod=0, node="node-b"),
        ev.EvictionRequested(job="train", pod=0, node="node-b"), bind(gpus=(1,), pipelined=True),
        ev.PodCompleted(job="train", pod=0, node="node-b"),
    )  # fmt: skip
    assert act(log, {}) == []
