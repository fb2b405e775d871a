"""The binder's handlers: fold deliveries into the fleet, publish what it confirms."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from muster import telemetry
from muster.bus import Bus, Delivery, chunk_events
from muster.events import BindRejected, BindRequested, Event
from muster.fencing import EpochFence, rejection
from muster.fleet.sim import SimFleet
from muster.health import Metrics
from muster.subjects import Subjects

log = logging.getLogger(__name__)


def _worth_a_line(count: int) -> bool:
    """1, 10, 100…: a storm of rejections is told, without a line per bind."""
    while count % 10 == 0:
        count //= 10
    return count == 1


class BinderHandlers:
    def __init__(
        self,
        bus: Bus,
        subjects: Subjects,
        fleet: SimFleet,
        clock: Callable[[], float],
        metrics: Metrics | None = None,
    ):
        self.bus = bus
        self.subjects = subjects
        self.fleet = fleet
        self.clock = clock
        self.applied_seq = 0
        self.published = 0
        self.live = False
        self.traces = telemetry.JobContexts()
        self.fence = EpochFence()
        self.to_reject: dict[tuple[str, int, int], BindRequested] = {}
        self.metrics = metrics
        self.rejected: dict[tuple[str, int], int] = {}
        """Binds refused per (pool, stale epoch): what the warnings count."""
        self._refused_elections = 0
        self.refusals: list[tuple[int, str]] = []
        """Pod facts the fleet refused (``muster.fact_admission``) in the batch being folded: (seq, why)."""
        # Confirmations go out in the order the fleet made them: a bind's PodBound before the
        # PodCompleted a later tick finds due, even while one of them waits out a server restart.
        self._confirming = asyncio.Lock()

    async def handle(self, deliveries: list[Delivery], live: bool) -> None:
        for delivery in deliveries:
            for event in delivery.events:
                refused = self._fold(event)
                if refused is not None:
                    self.refusals.append((delivery.seq, refused))
            if self.refusals:
                await self._report_refusals(delivery, live)
            self.traces.note(delivery.events, delivery.context)
            self.applied_seq = delivery.seq
        if live:
            await self._confirm(deliveries[-1].context)

    async def _report_refusals(self, delivery: Delivery, live: bool) -> None:
        """Dead-letter what the fleet refused in ``delivery``, once: a refusal met again while the history
        is read was lettered when it was new."""
        if live:
            for seq, reason in self.refusals[:1]:  # one letter per message, with its first refusal
                await self.bus.dead_letter("binder", delivery.subject, seq, reason, delivery.data)
        self.refusals.clear()

    def _fold(self, event: Event) -> str | None:
        """Fold one event; why the fleet refused it, if it did."""
        self.fence.admit(event)
        if self.fence.refused != self._refused_elections:
            self._refused_elections = self.fence.refused
            bad = self.fence.last_refused
            log.warning(
                "pool %s: ignored a LeaderElected of epoch %d from %r: the pool is at epoch %d",
                bad.pool, bad.epoch, bad.holder, self.fence.current(bad.pool),
            )  # fmt: skip
        if isinstance(event, BindRejected):
            self.to_reject.pop((event.job, event.pod, event.epoch), None)
        elif self.fence.is_stale(event):
            # A deposed leader's decision: never acted on; a bind is answered with BindRejected.
            if isinstance(event, BindRequested):
                self.to_reject[(event.job, event.pod, event.epoch)] = event
        else:
            return self.fleet.apply(event)
        return None

    def _rejections(self) -> list[Event]:
        out = [rejection(e, self.fence.current(e.pool)) for e in self.to_reject.values()]
        self.to_reject.clear()
        for event in out:
            self._tell(event)
        return out

    def _tell(self, event: BindRejected) -> None:
        """A refused bind is a leader deciding in vain: count it, and say so in the log."""
        if self.metrics is not None:
            self.metrics.binds_rejected.labels(event.pool).inc()
        key = (event.pool, event.epoch)
        count = self.rejected[key] = self.rejected.get(key, 0) + 1
        if _worth_a_line(count):
            log.warning(
                "pool %s: refused %d bind(s) decided under epoch %d; the pool is at epoch %d "
                "(a deposed leader still deciding, or a leader elected below the log's epoch)",
                event.pool, count, event.epoch, event.current_epoch,
            )  # fmt: skip

    def quiet(self) -> asyncio.Lock:
        """Held, no confirmation is under way: all the fleet did is then on the log (where a snapshot
        is sealed, see ``services.binder.snapshot``)."""
        return self._confirming

    async def rebuilt(self) -> None:
        """History is folded in: confirm what it left outstanding, then go live."""
        self.live = True
        await self.tick()

    async def tick(self) -> None:
        """Confirm what time alone makes due (completions of pods with a duration)."""
        await self._confirm(None)

    async def _confirm(self, context) -> None:
        async with self._confirming:
            await self._publish(self._rejections() + self.fleet.step(self.clock()), context)

    async def _publish(self, confirmations: list[Event], context) -> None:
        by_pool: dict[str, list[Event]] = {}
        for event in confirmations:
            by_pool.setdefault(getattr(event, "pool", "default"), []).append(event)
        by_job: dict[str, list[Event]] = {}
        if telemetry.recording():
            for event in confirmations:
                by_job.setdefault(event.job, []).append(event)
        for job, events in sorted(by_job.items()):
            telemetry.job_span(
                "binder.confirm",
                job,
                self.traces,
                {
                    "muster.outcome": sorted({type(e).__name__ for e in events}),
                    "muster.pods": [e.pod for e in events],
                },
            )
        for pool, events in sorted(by_pool.items()):
            for chunk in chunk_events(events):
                self.published += 1
                # The fleet is rebuilt from the log, so after a restart it never re-confirms
                # what it published: an id from its position in the log is enough.
                await self.bus.publish(
                    self.subjects.pods(pool),
                    chunk,
                    msg_id=f"binder:{self.applied_seq}:{self.published}",
                    context=context,
                )
