"""The podgrouper's tenant side: requests on ``workloads.<tenant>.<queue>`` in, decisions on
``podgroups`` and each answer, for the tenant alone, on ``answers.<tenant>``."""

from __future__ import annotations

from muster import telemetry
from muster.bus import Delivery, NatsBus, envelopes
from muster.events import CancelRequested, Event, WorkloadSubmitted
from muster.grouping.tenancy import Owners, answer, decide_cancel, decide_submission
from muster.held_topologies import HeldTopologies
from muster.subjects import Subjects


class TenantHandlers:
    """Decides each request on what ``podgroups`` says when it is handled.

    Crash-only: the owners are rebuilt from the log at start, and caught up
    before every decision, so they include every answer already published
    (this one's to earlier requests, and cancels by the system's logins).
    """

    def __init__(self, bus: NatsBus, subjects: Subjects, topologies: HeldTopologies | None = None):
        self.bus = bus
        self.subjects = subjects
        self.topologies = topologies if topologies is not None else HeldTopologies()
        """The system's topologies, which a tenant's workloads may name (and may not declare)."""
        self.owners = Owners()
        self._read_to = 0

    async def catch_up(self) -> None:
        end = await self.bus.last_seq()
        async for delivery in self.bus.read([self.subjects.podgroups], start_seq=self._read_to + 1):
            for event in delivery.events:
                self.owners.apply(event)
            end = max(end, delivery.seq)
        self._read_to = end

    async def handle(self, deliveries: list[Delivery]) -> None:
        for delivery in deliveries:
            found = self.subjects.tenant_and_queue(delivery.subject)
            if found is None:
                continue
            tenant, queue = found
            for request in delivery.events:
                await self.catch_up()
                events: list[Event]
                match request:
                    case WorkloadSubmitted():
                        events, key = (
                            decide_submission(
                                self.owners,
                                tenant,
                                queue,
                                request,
                                admitted=True,
                                held=self.topologies.by_name,
                            ),
                            request.uid,
                        )
                    case CancelRequested():
                        events, key = decide_cancel(self.owners, tenant, request), f"cancel:{request.uid}"
                    case _:
                        continue
                with telemetry.tracer().start_as_current_span(
                    "podgrouper.tenant",
                    context=delivery.context,
                    attributes={"muster.tenant": tenant, "muster.request": key},
                ):
                    # The tenant is part of the id: another tenant's request of the same uid is another answer.
                    # The answer goes first: a request redelivered after its decision was published would
                    # be decided again on a log that holds that decision (a cancelled job is no longer
                    # the tenant's), and the answer would contradict it.
                    await self.bus.publish(
                        self.subjects.answers(tenant),
                        [answer(request, events)],
                        msg_id=f"podgrouper:{tenant}:{key}:answer",
                    )
                    for i, data in enumerate(envelopes(events)):
                        await self.bus.publish_raw(
                            self.subjects.podgroups, data, msg_id=f"podgrouper:{tenant}:{key}:{i}"
                        )
