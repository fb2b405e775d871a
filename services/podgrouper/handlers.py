"""The podgrouper's handler: a submitted workload in, its gangs (or why not) out, and the KAI Topologies
it declares, which later submissions may name."""

from __future__ import annotations

import asyncio

from muster import telemetry
from muster.bus import Bus, Delivery, envelopes
from muster.events import TopologyDeclared, WorkloadSubmitted
from muster.grouping.submission import group_submission
from muster.held_topologies import HeldTopologies
from muster.snapshotting import Snapshotter
from muster.subjects import Subjects


class PodgrouperHandlers:
    """Groups each submission against the topologies held when it is handled.

    The podgrouper is the topologies subject's only writer, so a declaration is folded as soon as the
    stream has stored it: the next submission already resolves against it, and a restart reads the
    same declarations back (``held_topologies.read_held``)."""

    def __init__(
        self,
        bus: Bus,
        subjects: Subjects,
        topologies: HeldTopologies | None = None,
        snapshots: Snapshotter | None = None,
    ):
        self.bus = bus
        self.subjects = subjects
        self.topologies = topologies if topologies is not None else HeldTopologies()
        self.snapshots = snapshots
        """Of ``topologies``: one is taken, when due, after a declaration."""
        self.turn = asyncio.Lock()
        """Declaring and claiming the log's end for a snapshot take turns: a declaration half made is
        neither on the log nor safely off it."""

    async def handle(self, deliveries: list[Delivery]) -> None:
        for delivery in deliveries:
            for k, submission in enumerate(delivery.events):
                if not isinstance(submission, WorkloadSubmitted):
                    continue
                with telemetry.tracer().start_as_current_span(
                    "podgrouper.group",
                    context=delivery.context,
                    attributes={"muster.workload": submission.uid},
                ) as span:
                    events = group_submission(submission, admitted=True, held=self.topologies.by_name)
                    if events and isinstance(events[0], TopologyDeclared):
                        events = await self._declare(events, f"podgrouper:{delivery.seq}:{k}:topologies")
                    span.set_attribute("muster.jobs", [getattr(e, "name", "") for e in events])
                    for i, data in enumerate(envelopes(events)):
                        await self.bus.publish_raw(
                            self.subjects.podgroups, data, msg_id=f"podgrouper:{submission.uid}:{i}"
                        )

    async def _declare(self, events: list, msg_id: str) -> list:
        """Publish and fold the declarations ``events`` begins with; the rest (its groups) is returned.
        The id is the request's place in the log: a redelivered request is decided on topologies that
        hold its declarations already, and declares nothing again."""
        n = next((i for i, e in enumerate(events) if not isinstance(e, TopologyDeclared)), len(events))
        declared = events[:n]
        async with self.turn:
            stored = await self.bus.publish(self.subjects.topologies, declared, msg_id=msg_id)
            for event in declared:
                self.topologies.apply(event)
            self.topologies.watermark = max(self.topologies.watermark, stored)
            if self.snapshots is not None and self.snapshots.due(live=True):
                await self.snapshots.take()
        return events[n:]
