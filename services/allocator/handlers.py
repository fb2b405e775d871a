"""The live allocator around the shared fold: read deliveries, run cycles, publish decisions.

The allocator's state is a fold of the log (``muster.scheduler.fold``),
its own decisions included: after publishing a cycle's decisions the
allocator waits until it has read them back before it runs the next cycle,
so every cycle is a function of the log prefix up to its watermark, and
replay can re-derive it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

import msgspec
from muster import telemetry
from muster.bus import Bus, Delivery, chunk_events
from muster.cycle_record import cycle_record
from muster.events import AllocatorConfigured, BindRequested, LeaderElected, QueueStatus
from muster.health import Metrics
from muster.scheduler.engine import Allocator
from muster.scheduler.fold import AllocatorFold
from muster.scheduler.state import is_stale
from muster.subjects import Subjects
from opentelemetry import trace

FOLD_SLICE = 0.02
"""Seconds of folding after which ``handle`` lets the service's other work run (its lease above all):
a batch of big messages folds for seconds, longer than a short lease lives."""


class AllocatorHandlers:
    def __init__(
        self,
        bus: Bus,
        subjects: Subjects,
        engine: Allocator,
        clock: Callable[[], float],
        *,
        pool: str = "default",
        epoch: int = 0,
        metrics: Metrics | None = None,
    ):
        self.bus = bus
        self.subjects = subjects
        self.fold = AllocatorFold(engine, pool)
        self.clock = clock
        self.pool = pool
        self.epoch = epoch
        """The epoch of this instance's lease: what its decisions carry."""
        self.awaiting_seq = 0
        self.dirty = True
        self.queue_status: dict[str, QueueStatus] = {}
        self.cycles_run = 0
        self.traces = telemetry.JobContexts()
        self.metrics = metrics
        self.leader = False
        self.fold_slice = FOLD_SLICE

    @property
    def engine(self) -> Allocator:
        return self.fold.engine

    @property
    def applied_seq(self) -> int:
        """The stream sequence of the last delivery read."""
        return self.fold.watermark

    async def handle(self, deliveries: list[Delivery], live: bool) -> None:
        """Fold a batch, message by message; between messages, every ``fold_slice`` seconds, give the
        event loop a turn, so the lease is renewed (and cycles run) on time even in a long batch. A
        cycle between two messages is a cycle at the first one's watermark, as replay re-runs it."""
        paused = time.monotonic()
        for delivery in deliveries:
            self.traces.note(delivery.events, delivery.context)
            if self.fold.fold(delivery.seq, delivery.events):
                self.dirty = True
            if self.fold.refusals:
                await self._report_refusals(delivery, live)
            if time.monotonic() - paused >= self.fold_slice:
                await asyncio.sleep(0)
                paused = time.monotonic()

    async def _report_refusals(self, delivery: Delivery, live: bool) -> None:
        """Dead-letter what the fold refused in ``delivery`` (``scheduler.state.admission``), once: a
        refusal met again while the history is read was lettered when it was new."""
        if live:
            for seq, reason in self.fold.refusals:
                await self.bus.dead_letter(
                    f"allocator-{self.pool}", delivery.subject, seq, reason, delivery.data
                )
        self.fold.refusals.clear()

    async def become_leader(self, epoch: int, holder: str, previous: str | None) -> None:
        """This instance holds the pool's lease: record the new epoch, then decide under it."""
        self.epoch = epoch
        event = LeaderElected(pool=self.pool, epoch=epoch, holder=holder, previous=previous)
        self.awaiting_seq = await self.bus.publish(
            self.subjects.decisions(self.pool), [event], msg_id=f"leader:{self.pool}:{epoch}"
        )
        await self.announce()
        self.leader = True
        self.dirty = True
        if self.metrics is not None:
            self.metrics.leader.labels(self.pool).set(1)

    def step_down(self) -> None:
        """The lease is gone: stop deciding at once (the binder fences anything already sent)."""
        self.leader = False
        if self.metrics is not None:
            self.metrics.leader.labels(self.pool).set(0)

    async def announce(self) -> None:
        """Record the configuration this allocator decides with, so replay can use the same."""
        config = self.engine.config
        event = AllocatorConfigured(
            pool=self.pool, epoch=self.epoch, config=msgspec.to_builtins(config), digest=config.digest()
        )
        self.awaiting_seq = await self.bus.publish(
            self.subjects.decisions(self.pool),
            [event],
            msg_id=f"allocator-config:{self.pool}:{self.epoch}:{event.digest}",
        )

    def ready(self, clock: float) -> bool:
        """A cycle may run: its own last decisions are read back, and there is news or time to wait on."""
        if self.applied_seq < self.awaiting_seq:
            return False
        if self.engine.state.adoptions.awaiting:
            # Pods handed to the fleet already running are not answered yet: a cycle now could place
            # them a second time. The answers follow at once from the binder.
            return False
        return self.dirty or self.engine.waiting_for_time(clock)

    async def maybe_cycle(self) -> bool:
        clock = self.clock()
        if not self.ready(clock):
            return False
        self.dirty = False
        cycle = self.fold.next_cycle
        started = time.perf_counter()
        out = self.fold.cycle(clock, epoch=self.epoch)
        self.cycles_run += 1
        self._measure(out, time.perf_counter() - started)
        if self.engine.waiting_for_time(clock):
            # Time alone may change what the next cycle decides: cycle again without news, and once
            # more after the wait is over (a look at a later clock no longer sees the wait).
            self.dirty = True
        if out.decisions or out.completed.pending or self._starts_a_grace():
            # An idle cycle that changed nothing is not recorded: the log does not grow with repetition.
            chunks = chunk_events(cycle_record(out.decisions, out.completed))
            for i, chunk in enumerate(chunks):
                seq = await self.bus.publish(
                    self.subjects.decisions(self.pool),
                    chunk,
                    msg_id=f"allocator:{self.pool}:{self.epoch}:{cycle}:{i}",
                )
            self.awaiting_seq = seq
            self.fold.published(cycle)
            if telemetry.recording():
                self._trace(out, cycle)
        await self._publish_queue_status(out.queue_status, cycle)
        return True

    def _starts_a_grace(self) -> bool:
        """Whether a gang runs below its minimum with no clock yet on its grace: the grace is timed
        from the first recorded cycle that saw it, so this cycle must be recorded even if idle."""
        state = self.engine.state
        return any(
            name not in state.ledger.stale_since and is_stale(state.jobs[name])
            for name in sorted(state.ledger.stale_candidates)
        )

    def _measure(self, out, seconds: float) -> None:
        m = self.metrics
        if m is None:
            return
        m.cycle_seconds.labels(self.pool).observe(seconds)
        binds = sum(1 for d in out.decisions if isinstance(d, BindRequested))
        if binds:
            m.decisions.labels(self.pool, "bind").inc(binds)
        if len(out.decisions) > binds:
            m.decisions.labels(self.pool, "evict").inc(len(out.decisions) - binds)
        m.pending_jobs.labels(self.pool).set(len(out.reasons))
        for status in out.queue_status:
            for resource, value in status.fair_share.items():
                m.fair_share.labels(status.name, resource).set(value)
            for resource, value in status.allocated.items():
                m.allocated.labels(status.name, resource).set(value)

    def _trace(self, out, cycle: int) -> None:
        """A span for the cycle, and one in each affected job's own trace, linked to it."""
        with telemetry.tracer().start_as_current_span(
            "allocator.cycle",
            attributes={
                "muster.pool": self.pool,
                "muster.cycle": cycle,
                "muster.watermark": self.applied_seq,
            },
        ) as span:
            link = trace.Link(span.get_span_context())
            by_job: dict[str, list] = {}
            for decision in out.decisions:
                by_job.setdefault(decision.job, []).append(decision)
            for job, decisions in sorted(by_job.items()):
                telemetry.job_span(
                    "allocator.decide",
                    job,
                    self.traces,
                    {
                        "muster.decision": sorted({type(d).__name__ for d in decisions}),
                        "muster.nodes": sorted({d.node for d in decisions}),
                        "muster.cycle": cycle,
                    },
                    links=[link],
                )
            for job, reason in sorted(out.completed.pending.items()):
                if reason:
                    telemetry.job_span(
                        "allocator.wait",
                        job,
                        self.traces,
                        {"muster.reason": reason, "muster.cycle": cycle},
                        [link],
                    )

    async def _publish_queue_status(self, statuses: list[QueueStatus], cycle: int) -> None:
        changed = [s for s in statuses if self.queue_status.get(s.name) != s]
        if not changed:
            return
        for s in changed:
            self.queue_status[s.name] = s
        await self.bus.publish(
            self.subjects.queue_status,
            changed,
            msg_id=f"queue-status:{self.pool}:{self.epoch}:{cycle}:{self.cycles_run}",
        )
