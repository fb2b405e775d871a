"""Names at every reader's door: Kubernetes' rule where an event introduces one, a length where it refers to one.

Issue #25: an 8,001-character job name froze the projection for good; names with spaces,
'/', newlines, right-to-left overrides went everywhere unchecked.
"""

from __future__ import annotations

import pytest
from muster.bus.admission import Refused, admit
from muster.names import MAX_NAME
from muster.subjects import Subjects

from tests.poison import raw_envelope

S = Subjects("muster")

BAD_NAMES = {
    "8,001 characters": "x" * 8001,
    "a space": "coll x",
    "an underscore": "coll_x",
    "a capital": "Coll-x",
    "a slash": "team-b/coll-x",
    "a newline": "coll\nx",
    "a right-to-left override": "coll\u202ex",
    "an accent": "collé",
    "nothing": "",
}


def group(**fields) -> dict:
    return {"type": "PodGroupCreated", "name": "coll-x", "queue": "team-a", **fields}


def node(name: str) -> dict:
    return {"name": name, "resources": {"gpu": 8}}


def queue(**fields) -> dict:
    return {"name": "team-a", **fields}


# (subject, the event with a name put at ``field``, the field's path below the event)
INTRODUCING = {
    "job": (S.podgroups, lambda name: group(name=name), ".name"),
    "a job's queue": (S.podgroups, lambda name: group(queue=name), ".queue"),
    "queue request": (S.queue_requests, lambda name: {"type": "UpsertQueue", "queue": queue(name=name)}, ".queue.name"),
    "queue": (S.queues, lambda name: {"type": "QueueUpserted", "queue": queue(name=name)}, ".queue.name"),
    "queue parent": (S.queues, lambda name: {"type": "QueueUpserted", "queue": queue(parent=name)}, ".queue.parent"),
    "node": (S.nodes("default"), lambda name: {"type": "NodeRegistered", "node": node(name)}, ".node.name"),
    "node heartbeat": (S.nodes("default"), lambda name: {"type": "NodeUpdated", "node": node(name)}, ".node.name"),
    "submission's queue": (S.workloads, lambda name: {"type": "WorkloadSubmitted", "uid": "u", "manifests": [], "queue": name}, ".queue"),
}  # fmt: skip


def refusal(subject: str, data: bytes) -> str:
    with pytest.raises(Refused) as refused:
        admit(S, subject, data)
    return str(refused.value)


def test_an_8001_character_job_name_is_refused_naming_the_field_and_its_length():
    reason = refusal(S.podgroups, raw_envelope(group(name="x" * 8001)))
    assert reason.startswith("$.events[0].name: ")
    assert "8001 characters long, more than the 253 a job name may have" in reason


# Where '' says "none" (no parent, no queue of the submission's own), as a missing field does.
NONE_WHEN_EMPTY = {"queue parent", "submission's queue"}


@pytest.mark.parametrize(
    ("where", "why"),
    [(w, y) for w in INTRODUCING for y in BAD_NAMES if BAD_NAMES[y] or w not in NONE_WHEN_EMPTY],
)
def test_a_name_kubernetes_would_refuse_is_refused_where_it_is_introduced(where, why):
    subject, event, field = INTRODUCING[where]
    reason = refusal(subject, raw_envelope(event(BAD_NAMES[why])))
    assert reason.startswith(f"$.events[0]{field}: ") and "is not a valid" in reason


@pytest.mark.parametrize("where", sorted(NONE_WHEN_EMPTY))
def test_an_empty_parent_or_submission_queue_names_none(where):
    subject, event, _ = INTRODUCING[where]
    assert admit(S, subject, raw_envelope(event("")))


@pytest.mark.parametrize("where", INTRODUCING)
@pytest.mark.parametrize("name", ["coll-x", "team-a.coll-x-2", "a" * 63])
def test_a_name_kubernetes_accepts_is_admitted_wherever_it_is_introduced(where, name):
    subject, event, _ = INTRODUCING[where]
    assert admit(S, subject, raw_envelope(event(name)))


@pytest.mark.parametrize("where", ["job", "queue", "node"])
def test_a_job_queue_or_node_name_may_have_253_characters_and_not_254(where):
    subject, event, field = INTRODUCING[where]
    assert admit(S, subject, raw_envelope(event("a" * MAX_NAME)))
    assert refusal(subject, raw_envelope(event("a" * (MAX_NAME + 1)))).startswith(f"$.events[0]{field}: ")


@pytest.mark.parametrize("pool", ["gpu pool", "gpu/a", "gpu\na", "gpu\u202ea", "a" * 64, ""])
def test_a_pool_is_named_as_a_label_value_is(pool):
    for event in (group(pool=pool), {"type": "NodeRegistered", "node": {**node("n1"), "pool": pool}}):
        assert ".pool: " in refusal(
            S.podgroups if "name" in event else S.nodes("default"), raw_envelope(event)
        )
    assert admit(S, S.podgroups, raw_envelope(group(pool="A100_pool.east")))


def test_a_message_shows_a_refused_name_escaped_and_cut_short():
    reason = refusal(S.podgroups, raw_envelope(group(name="coll\u202ex\n" + "y" * 8000)))
    assert "\u202e" not in reason and "\n" not in reason and "\\u202e" in reason
    assert len(reason) < 500


def pod_event(kind: str, subject: str, **names) -> tuple[str, object, str]:
    """A pod event whose name at the one keyword given is the name under test."""
    ((field, _),) = names.items()
    fields = {"job": "j", "node": "n1"}
    return subject, lambda name: {"type": kind, **fields, "pod": 0, field: name}, f".{field}"


def named_event(kind: str, subject: str, **fields) -> tuple[str, object, str]:
    """An event about one named job, queue or node."""
    return subject, lambda name: {"type": kind, **fields, "name": name}, ".name"


# (subject, the event with the name under test, the name's path below the event)
REFERRING = {
    "a bind's job": pod_event("BindRequested", S.decisions("default"), job=...),
    "a bind's node": pod_event("BindRequested", S.decisions("default"), node=...),
    "an eviction's job": pod_event("EvictionRequested", S.decisions("default"), job=...),
    "an eviction's beneficiary": pod_event("EvictionRequested", S.decisions("default"), for_job=...),
    "a confirmation's job": pod_event("PodBound", S.pods("default"), job=...),
    "an end's node": pod_event("PodCompleted", S.pods("default"), node=...),
    "a deleted job": named_event("PodGroupDeleted", S.podgroups),
    "a removed node": named_event("NodeRemoved", S.nodes("default")),
    "a lost node": named_event("NodeLost", S.nodes("default")),
    "a deleted queue": named_event("DeleteQueue", S.queue_requests),
    "a queue's status": named_event("QueueStatus", S.queue_status),
    "a cancelled job": (
        S.tenant_workloads("team-a", "q"),
        lambda name: {"type": "CancelRequested", "uid": "u", "job": name},
        ".job",
    ),
    "an adopted pod's job": (
        S.nodes("default"),
        lambda name: {"type": "AdoptPods", "pods": [{"job": name, "pod": 0, "node": "n1"}]},
        ".pods[0].job",
    ),
}


def referring(where: str, name: str) -> tuple[str, bytes]:
    subject, event, _ = REFERRING[where]
    return subject, raw_envelope(event(name))


@pytest.mark.parametrize("where", REFERRING)
def test_a_name_an_event_only_refers_to_is_refused_past_253_characters_naming_the_field(where):
    reason = refusal(*referring(where, "x" * 8001))
    assert reason.startswith(f"$.events[0]{REFERRING[where][2]}: ") and "limit of 253 characters" in reason


@pytest.mark.parametrize("where", REFERRING)
def test_a_name_an_event_only_refers_to_is_checked_for_length_alone(where):
    # Whoever introduced the name checked the rest; a log written before names were checked replays.
    (event,) = admit(S, *referring(where, "Coll x" + "y" * (MAX_NAME - 6)))
    assert event


def test_a_submission_id_past_253_characters_is_refused_naming_the_field():
    submission = {"type": "WorkloadSubmitted", "uid": "u" * 8001, "manifests": []}
    assert refusal(S.workloads, raw_envelope(submission)).startswith("$.events[0].uid: ")


def test_a_tenant_that_owns_a_job_is_named_by_the_tenant_rule():
    assert refusal(S.podgroups, raw_envelope(group(owner="Team A"))).startswith("$.events[0].owner: ")
    assert admit(S, S.podgroups, raw_envelope(group(owner="team-a")))


def test_an_exit_code_past_int32_is_refused_naming_the_field():
    failed = {"type": "PodFailed", "job": "j", "pod": 0, "node": "n1", "exit_code": 2**40}
    assert refusal(S.pods("default"), raw_envelope(failed)).startswith("$.events[0].exit_code: ")
    assert admit(S, S.pods("default"), raw_envelope({**failed, "exit_code": -9}))
