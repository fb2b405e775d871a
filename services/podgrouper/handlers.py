"""The podgrouper's handler: a submitted workload in, its gangs (or why not) out."""

from __future__ import annotations

from muster import telemetry
from muster.bus import Bus, Delivery, chunk_events
from muster.events import Event, WorkloadRejected, WorkloadSubmitted
from muster.subjects import Subjects

from services.podgrouper import command_job, muster_job  # noqa: F401  (register the muster kinds)
from services.podgrouper.errors import ManifestError
from services.podgrouper.group import group_manifests


def group_submission(submission: WorkloadSubmitted) -> list[Event]:
    """PodGroupCreated for each gang of the workload, or one WorkloadRejected naming the field."""
    try:
        return list(
            group_manifests(
                submission.manifests,
                submitted_at=submission.submitted_at,
                uid=submission.uid,
                queue_override=submission.queue,
            )
        )
    except ManifestError as exc:
        return [WorkloadRejected(uid=submission.uid, error=exc.message, field=exc.path)]


class PodgrouperHandlers:
    def __init__(self, bus: Bus, subjects: Subjects):
        self.bus = bus
        self.subjects = subjects

    async def handle(self, deliveries: list[Delivery]) -> None:
        for delivery in deliveries:
            for submission in delivery.events:
                if not isinstance(submission, WorkloadSubmitted):
                    continue
                with telemetry.tracer().start_as_current_span(
                    "podgrouper.group",
                    context=delivery.context,
                    attributes={"muster.workload": submission.uid},
                ) as span:
                    events = group_submission(submission)
                    span.set_attribute("muster.jobs", [getattr(e, "name", "") for e in events])
                    for i, chunk in enumerate(chunk_events(events)):
                        await self.bus.publish(
                            self.subjects.podgroups, chunk, msg_id=f"podgrouper:{submission.uid}:{i}"
                        )
