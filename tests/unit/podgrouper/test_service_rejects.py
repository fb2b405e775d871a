"""The podgrouper service answers a workload it cannot group with WorkloadRejected naming the field."""

from __future__ import annotations

from muster.bus import Delivery
from muster.bus.memory import MemoryBus
from muster.events import WorkloadRejected, WorkloadSubmitted, decode_envelope
from muster.grouping.limits import MAX_PODS
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
