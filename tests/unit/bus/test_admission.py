"""What every reader admits from the bus: its subject's event types, within bounds, or a reason why not."""

from __future__ import annotations

import pytest
from muster import events as ev
from muster.bounds import MAX_NESTING, MAX_PODS_PER_GROUP
from muster.bus.admission import Refused, admit
from muster.events import encode_envelope
from muster.subjects import EVENT_TYPES, Subjects

from tests.poison import deep_envelope, raw_envelope

S = Subjects("muster")
TAGS = {t.__struct_config__.tag for t in ev.EVENT_TYPES}


def group(**fields) -> dict:
    return {"type": "PodGroupCreated", "name": "j", "queue": "team-a", **fields}


def node(**resources) -> dict:
    return {"type": "NodeRegistered", "node": {"name": "n1", "resources": resources}}


def refusal(subject: str, data: bytes) -> str:
    with pytest.raises(Refused) as refused:
        admit(S, subject, data)
    return str(refused.value)


# -- event types per subject ---------------------------------------------------------------------


def test_every_type_named_in_the_table_is_an_event_and_every_event_travels_somewhere():
    named = set().union(*EVENT_TYPES.values())
    assert named == TAGS


@pytest.mark.parametrize(
    ("subject", "event"),
    [
        (S.workloads, ev.WorkloadSubmitted(uid="u", manifests=[])),
        (S.podgroups, ev.PodGroupCreated(name="j", queue="q")),
        (S.queue_requests, ev.DeleteQueue(name="q")),
        (S.queues, ev.QueueDeleted(name="q")),
        (S.queue_status, ev.QueueStatus(name="q")),
        (S.nodes("gpu-a"), ev.NodeLost(name="n1", pool="gpu-a")),
        (S.nodes("gpu-a"), ev.PodEvicted(job="j", pod=0, node="n1", pool="gpu-a")),
        (S.decisions("gpu-a"), ev.LeaderElected(pool="gpu-a", epoch=3, holder="a")),
        (S.pods("gpu-a"), ev.BindRejected(job="j", pod=0, node="n1", pool="gpu-a")),
        (S.deadletter, ev.DeadLettered(service="s", subject=S.pods("default"), error="x")),
    ],
)
def test_an_event_on_a_subject_of_its_flow_is_admitted(subject, event):
    assert admit(S, subject, encode_envelope([event])) == [event]


FORGED_SUBMISSIONS = [
    ev.BindRequested(job="j", pod=0, node="n1", gpus=[0], epoch=1),
    ev.PodBound(job="j", pod=0, node="n1"),
    ev.QueueUpserted(queue=ev.QueueSpec(name="forged")),
    ev.NodeRegistered(node=ev.NodeSpec(name="forged", resources=ev.Resources(gpu=1000))),
]


@pytest.mark.parametrize("forged", FORGED_SUBMISSIONS, ids=ev.event_type)
def test_a_submission_carrying_any_other_type_is_refused_naming_the_type_and_the_subject(forged):
    envelope = encode_envelope([ev.WorkloadSubmitted(uid="u", manifests=[]), forged])
    reason = refusal(S.workloads, envelope)
    assert reason == f"$.events[1]: a {ev.event_type(forged)} may not travel on muster.workloads"


@pytest.mark.parametrize(
    "forged",
    [
        ev.LeaderElected(pool="default", epoch=2**62, holder="agent"),
        ev.BindRequested(job="j", pod=0, node="n1", epoch=1),
    ],
    ids=ev.event_type,
)
def test_pod_facts_cannot_carry_a_leader_or_a_decision(forged):
    assert "may not travel on muster.pods.default" in refusal(S.pods("default"), encode_envelope([forged]))


def test_a_subject_of_no_flow_carries_nothing():
    assert "may not travel on muster.elsewhere" in refusal("muster.elsewhere", raw_envelope(group()))
    assert S.allowed_types("muster.pods.a.b.c") == frozenset()


def test_the_table_is_read_under_the_systems_own_prefix():
    other = Subjects("team-a")
    assert other.allowed_types(other.pods("default")) == EVENT_TYPES["pods.*"]
    assert other.allowed_types(S.pods("default")) == frozenset()


# -- poison input ----------------------------------------------------------------------------------


def test_json_nested_five_thousand_deep_is_refused_not_a_recursion_error():
    assert "nested deeper than the decoder can follow" in refusal(S.workloads, deep_envelope(5000))


def test_a_manifest_nested_past_the_limit_is_refused_naming_the_field():
    assert refusal(S.workloads, deep_envelope(MAX_NESTING + 1)).startswith(
        "$.events[0].manifests: nested deeper"
    )
    assert admit(S, S.workloads, deep_envelope(MAX_NESTING - 3))


def test_an_undecodable_message_is_refused_with_the_decoders_reason():
    assert "$.events[0].job" in refusal(S.pods("default"), b'{"events": [{"type": "PodBound", "job": 7}]}')


def test_a_priority_past_int32_is_refused_naming_the_field():
    reason = refusal(S.podgroups, raw_envelope(group(priority=3_000_000_000)))
    assert reason == "$.events[0].priority: 3000000000 is above the limit of 2147483647"


def test_a_count_of_a_billion_pods_is_refused_naming_the_field():
    reason = refusal(S.podgroups, raw_envelope(group(pods=[{"count": 1_000_000_000}])))
    assert reason == f"$.events[0].pods[0].count: 1000000000 is above the limit of {MAX_PODS_PER_GROUP}"


def test_pod_specs_adding_up_past_the_limit_are_refused():
    half = MAX_PODS_PER_GROUP // 2 + 1
    reason = refusal(S.podgroups, raw_envelope(group(pods=[{"count": half}, {"count": half}])))
    assert reason.startswith("$.events[0].pods: ")


@pytest.mark.parametrize(
    ("resources", "field"),
    [
        ({"gpu": 1e12}, "gpu"),
        ({"gpu": 2.5}, "gpu"),
        ({"cpu": -1}, "cpu"),
        ({"memory": -(2**40)}, "memory"),
        ({"memory": 2**62}, "memory"),
        ({"gpu_memory": 2**50}, "gpu_memory"),
        ({"extended": {"rdma/ib": -2}}, "extended['rdma/ib']"),
    ],
)
def test_node_resources_below_zero_or_past_a_sane_maximum_are_refused(resources, field):
    reason = refusal(S.nodes("default"), raw_envelope(node(**resources)))
    assert reason.startswith(f"$.events[0].node.resources.{field}: ")


@pytest.mark.parametrize("gpu", [1.5, -0.5, 5000])
def test_a_pod_asks_for_a_share_of_one_device_or_whole_devices(gpu):
    reason = refusal(S.podgroups, raw_envelope(group(pods=[{"resources": {"gpu": gpu}}])))
    assert reason.startswith("$.events[0].pods[0].resources.gpu: ")


@pytest.mark.parametrize("gpu", [0, 0.25, 1, 8])
def test_fractions_up_to_one_and_whole_devices_are_admitted(gpu):
    (admitted,) = admit(S, S.podgroups, raw_envelope(group(pods=[{"resources": {"gpu": gpu}}])))
    assert admitted.pods[0].resources.gpu == gpu


def test_a_decision_for_a_device_the_node_cannot_have_is_refused():
    bind = ev.BindRequested(job="j", pod=0, node="n1", gpus=[0, 10_000], epoch=1)
    assert refusal(S.decisions("default"), encode_envelope([bind])).startswith("$.events[0].gpus[1]: ")


def test_a_string_holding_a_nul_character_is_refused():
    assert "NUL" in refusal(S.podgroups, raw_envelope(group(name="a\x00b")))


def test_a_backslash_before_u0000_is_text_not_a_nul_character():
    (admitted,) = admit(S, S.podgroups, raw_envelope(group(kind="a\\u0000b")))
    assert admitted.kind == "a\\u0000b"


def test_the_good_events_of_a_refused_envelope_are_refused_with_it():
    envelope = raw_envelope(group(name="good"), group(name="bad", priority=-(2**40)))
    assert refusal(S.podgroups, envelope).startswith("$.events[1].priority: ")
