"""The podgrouper's handler: a submitted workload in, its gangs (or why not) out."""

from __future__ import annotations

from muster import telemetry
from muster.bus import Bus, Delivery, envelopes
from muster.events import WorkloadSubmitted
from muster.grouping.submission import group_submission
from muster.subjects import Subjects


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
                    events = group_submission(submission, admitted=True)
                    span.set_attribute("muster.jobs", [getattr(e, "name", "") for e in events])
                    for i, data in enumerate(envelopes(events)):
                        await self.bus.publish_raw(
                            self.subjects.podgroups, data, msg_id=f"podgrouper:{submission.uid}:{i}"
                        )
