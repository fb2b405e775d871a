"""The podgrouper service answers a workload it cannot group with WorkloadRejected naming the field."""

from __future__ import annotations

import pytest
from muster.bus import Delivery
from muster.bus.admission import Refused, admit
from muster.bus.memory import MemoryBus
from muster.events import WorkloadRejected, WorkloadSubmitted, decode_envelope, encode_envelope
from muster.grouping.limits import MAX_DEPTH, MAX_PODS
from muster.grouping.submission import group_submission

from services.podgrouper.handlers import PodgrouperHandlers

POD_TEMPLATE = {"spec": {"containers": [{"name": "c"}]}}


def deployment(replicas: int) -> dict:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "d"},
        "spec": {"replicas": replicas, "template": POD_TEMPLATE},
    }


def deep_manifest(levels: int) -> dict:
    node: dict = {}
    for _ in range(levels):
        node = {"x": node}
    return {"apiVersion": "example.com/v1", "kind": "Thing", "metadata": {"name": "t"}, "spec": node}


def test_a_thousand_levels_deep_manifest_is_rejected_naming_the_field():
    [answer] = group_submission(WorkloadSubmitted(uid="u1", manifests=[deep_manifest(1000)]))
    assert isinstance(answer, WorkloadRejected) and answer.uid == "u1"
    assert answer.field.startswith("spec.x.x") and "nested more than" in answer.error


def _depth(levels_below_spec: int) -> int:
    """Levels of a deep_manifest: the document, its spec, then one mapping per level."""
    return levels_below_spec + 2


@pytest.mark.parametrize("levels", [MAX_DEPTH - 2, MAX_DEPTH - 1])
def test_admission_bounds_a_submissions_nesting_exactly_as_grouping_does(levels):
    # The podgrouper skips its own walk for admitted submissions (admitted=True): sound only
    # while a document admission lets through is one grouping would let through, and no deeper.
    bus = MemoryBus()
    submission = WorkloadSubmitted(uid="u", manifests=[deep_manifest(levels)])
    grouped = group_submission(submission)
    try:
        admit(bus.subjects, bus.subjects.workloads, encode_envelope([submission]))
        admitted = True
    except Refused:
        admitted = False
    nested_too_deep = isinstance(grouped[0], WorkloadRejected) and "nested more than" in grouped[0].error
    assert admitted is not nested_too_deep
    assert nested_too_deep is (_depth(levels) > MAX_DEPTH)


def test_a_billion_replicas_are_rejected_naming_the_field():
    [answer] = group_submission(WorkloadSubmitted(uid="u2", manifests=[deployment(10**9)]))
    assert isinstance(answer, WorkloadRejected)
    assert answer.field == "spec.replicas" and "1000000000 pods is more than" in answer.error


def test_a_group_the_bus_would_refuse_is_rejected_instead_of_published():
    priority_class = {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": "huge"},
        "value": 3_000_000_000,
    }
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "labels": {"priorityClassName": "huge"}},
        **POD_TEMPLATE,
    }
    [answer] = group_submission(WorkloadSubmitted(uid="u3", manifests=[priority_class, pod]))
    assert isinstance(answer, WorkloadRejected) and "field priority" in answer.error


async def test_the_handler_publishes_the_rejection_on_the_podgroups_subject():
    bus = MemoryBus()
    submission = WorkloadSubmitted(uid="u4", manifests=[deployment(10**9)])
    await PodgrouperHandlers(bus, bus.subjects).handle([Delivery(bus.subjects.workloads, 1, [submission])])
    [message] = bus.messages
    assert message.subject == bus.subjects.podgroups
    error = f"1000000000 pods is more than the {MAX_PODS} a workload may have"
    assert decode_envelope(message.data) == [WorkloadRejected(uid="u4", error=error, field="spec.replicas")]
