"""A machine agent's own subjects (``pods.<pool>.<node>``, ``nodes.<pool>.<node>``) carry facts about
that node, in that pool, only: whoever may publish there speaks for that one node."""

from __future__ import annotations

import pytest
from muster import events as ev
from muster.bus.admission import Refused, admit
from muster.events import encode_envelope
from muster.scheduler.fold import consumed_subjects
from muster.subjects import Subjects, subject_matches

S = Subjects("muster")


def spec(name: str, pool: str = "gpu") -> ev.NodeSpec:
    return ev.NodeSpec(name=name, pool=pool, resources=ev.Resources(gpu=8))


def refusal(subject: str, events: list[ev.Event]) -> str:
    with pytest.raises(Refused) as refused:
        admit(S, subject, encode_envelope(events))
    return str(refused.value)


@pytest.mark.parametrize(
    ("subject", "event"),
    [
        (S.node_facts("gpu", "n1"), ev.NodeRegistered(node=spec("n1"))),
        (S.node_facts("gpu", "n1"), ev.NodeUpdated(node=spec("n1"))),
        (S.node_facts("gpu", "n1"), ev.NodeRemoved(name="n1", pool="gpu")),
        (S.node_pods("gpu", "n1"), ev.PodBound(job="j", pod=0, node="n1", gpus=[0], pool="gpu")),
        (S.node_pods("gpu", "n1"), ev.PodCompleted(job="j", pod=0, node="n1", pool="gpu")),
        (S.node_pods("gpu", "n1"), ev.PodFailed(job="j", pod=0, node="n1", pool="gpu")),
        (S.node_pods("gpu", "n1"), ev.PodEvicted(job="j", pod=0, node="n1", pool="gpu")),
        (S.node_pods("gpu", "n1"), ev.BindFailed(job="j", pod=0, node="n1", reason="r", pool="gpu")),
    ],
)
def test_a_fact_about_the_subjects_own_node_is_admitted(subject, event):
    assert admit(S, subject, encode_envelope([event])) == [event]


def test_a_dotted_node_name_has_a_subject_of_its_own():
    subject = S.node_pods("gpu", "rack-1.host-2")
    assert subject == "muster.pods.gpu.rack-1_host-2"
    event = ev.PodCompleted(job="j", pod=0, node="rack-1.host-2", pool="gpu")
    assert admit(S, subject, encode_envelope([event])) == [event]


@pytest.mark.parametrize(
    ("subject", "event", "field"),
    [
        (S.node_pods("gpu", "a"), ev.PodCompleted(job="j", pod=0, node="b", pool="gpu"), "$.events[0].node"),
        (
            S.node_pods("gpu", "a"),
            ev.PodBound(job="j", pod=0, node="b", gpus=[9], pool="gpu"),
            "$.events[0].node",
        ),
        (S.node_facts("gpu", "a"), ev.NodeUpdated(node=spec("b")), "$.events[0].node.name"),
        (S.node_facts("gpu", "a"), ev.NodeRemoved(name="b", pool="gpu"), "$.events[0].name"),
    ],
)
def test_a_fact_naming_another_node_is_refused_by_the_field_that_names_it(subject, event, field):
    assert refusal(subject, [event]).startswith(f"{field}: 'b' is not the node of {subject}")


def test_one_foreign_node_in_an_envelope_refuses_the_whole_envelope():
    own = ev.PodCompleted(job="j", pod=0, node="a", pool="gpu")
    other = ev.PodCompleted(job="j", pod=1, node="b", pool="gpu")
    assert refusal(S.node_pods("gpu", "a"), [own, other]).startswith("$.events[1].node:")


@pytest.mark.parametrize("named", ["a-b", "a_b"])
def test_only_the_node_whose_dots_make_the_token_owns_its_subject(named):
    # Only `a.b` owns `..._a_b`: neither `a-b` nor `a_b` (which no node may be called) does.
    event = ev.PodCompleted(job="j", pod=0, node=named, pool="gpu")
    assert "is not the node" in refusal(S.node_pods("gpu", "a.b"), [event])


@pytest.mark.parametrize(
    ("subject", "event", "field"),
    [
        (S.node_pods("gpu", "a"), ev.PodCompleted(job="j", pod=0, node="a", pool="cpu"), "$.events[0].pool"),
        (S.node_facts("gpu", "a"), ev.NodeRegistered(node=spec("a", pool="cpu")), "$.events[0].node.pool"),
    ],
)
def test_a_fact_for_another_pool_is_refused_on_a_nodes_subject(subject, event, field):
    assert refusal(subject, [event]).startswith(f"{field}: 'cpu' is not the pool of {subject}")


@pytest.mark.parametrize(
    "event",
    [
        ev.NodeLost(name="a", pool="gpu"),
        ev.AdoptPods(pool="gpu"),
        ev.BindRejected(job="j", pod=0, node="a", pool="gpu"),
        ev.BindRequested(job="j", pod=0, node="a", gpus=[0], epoch=1),
    ],
)
def test_what_no_agent_says_may_not_travel_on_a_nodes_subject(event):
    subjects = (S.node_facts("gpu", "a"), S.node_pods("gpu", "a"))
    for subject in subjects:
        assert "may not travel on" in refusal(subject, [event])


def test_the_pools_own_subjects_are_not_checked_for_a_node():
    # Logs written before node subjects existed replay as they were: the binder's and nodewatch's
    # facts name whichever node they are about.
    event = ev.PodCompleted(job="j", pod=0, node="b", pool="gpu")
    assert admit(S, S.pods("gpu"), encode_envelope([event])) == [event]


def test_the_allocator_reads_both_the_pools_subjects_and_every_nodes():
    wanted = consumed_subjects(S, "gpu")
    for subject in (S.pods("gpu"), S.node_pods("gpu", "a"), S.nodes("gpu"), S.node_facts("gpu", "a")):
        assert any(subject_matches(p, subject) for p in wanted), subject
    assert not any(subject_matches(p, S.node_pods("cpu", "a")) for p in wanted)
