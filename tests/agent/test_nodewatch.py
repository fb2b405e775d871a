"""The node monitor's rule: silent agent nodes are declared lost, their pods evicted, the node removed."""

from __future__ import annotations

from muster import events as ev
from muster.nodes.watch import NodeWatch

AGENT = {"muster.dev/backend": "agent"}


def node(name: str, labels=AGENT) -> ev.NodeSpec:
    return ev.NodeSpec(name=name, labels=dict(labels), resources=ev.Resources(gpu=2))


def watch_with(*timed: tuple[float, ev.Event]) -> NodeWatch:
    watch = NodeWatch(timeout=10)
    for seq, (clock, event) in enumerate(timed, start=1):
        watch.apply(event, seq, clock)
    return watch


def test_a_silent_agent_node_is_lost_with_its_pods_evicted_and_then_removed_in_one_envelope():
    watch = watch_with(
        (0, ev.NodeRegistered(node=node("a"))),
        (1, ev.BindRequested(job="j", pod=1, node="a", gpus=[1])),
        (1, ev.BindRequested(job="j", pod=0, node="a", gpus=[0])),
        (2, ev.PodBound(job="j", pod=0, node="a", gpus=[0])),
    )
    assert watch.losses_due(10) == []
    (loss,) = watch.losses_due(10.5)
    assert [type(e).__name__ for e in loss.events] == ["NodeLost", "PodEvicted", "PodEvicted", "NodeRemoved"]
    assert [(e.job, e.pod) for e in loss.events[1:3]] == [("j", 0), ("j", 1)]
    assert loss.events[0].last_seen == 0


def test_heartbeats_keep_a_node_and_ended_pods_are_not_evicted():
    watch = watch_with(
        (0, ev.NodeRegistered(node=node("a"))),
        (1, ev.BindRequested(job="j", pod=0, node="a")),
        (2, ev.PodCompleted(job="j", pod=0, node="a")),
        (8, ev.NodeUpdated(node=node("a"))),
    )
    assert watch.losses_due(17) == []
    (loss,) = watch.losses_due(19)
    assert [type(e).__name__ for e in loss.events] == ["NodeLost", "NodeRemoved"]


def test_a_node_is_lost_once_until_it_comes_back_and_then_can_be_lost_again():
    watch = watch_with((0, ev.NodeRegistered(node=node("a"))))
    (first,) = watch.losses_due(11)
    for event in first.events:
        watch.apply(event, 9, 11)
    assert watch.losses_due(30) == []
    watch.apply(ev.NodeUpdated(node=node("a")), 10, 31)
    (second,) = watch.losses_due(42)
    assert second.msg_id != first.msg_id


def test_nodes_not_run_by_an_agent_and_drained_nodes_are_never_lost():
    watch = watch_with(
        (0, ev.NodeRegistered(node=node("sim", labels={}))),
        (0, ev.NodeRegistered(node=node("a"))),
        (1, ev.NodeRemoved(name="a")),
    )
    assert watch.losses_due(100) == []


def test_a_bind_to_a_lost_node_fails():
    watch = watch_with((0, ev.NodeRegistered(node=node("a"))), (20, ev.NodeLost(name="a")))
    watch.apply(ev.BindRequested(job="j", pod=0, node="a"), 5, 21)
    ((pool, (failed,), _),) = watch.refusals()
    assert isinstance(failed, ev.BindFailed) and failed.reason == "node a is lost"
    assert watch.refusals() == []
