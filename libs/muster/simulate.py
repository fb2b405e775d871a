"""Run a scenario through the real allocator, in one process.

One code path: the scenario becomes events on an in-process append-only log;
the live allocator's fold (``muster.scheduler.fold.AllocatorFold``) and the
simulated fleet (``muster.fleet.sim.SimFleet``) read every event of that
log, including their own. The fleet first reports the pods the scenario says
already run (it was handed them with its nodes). Then each cycle:

1. the fleet confirms what is due at this clock (pods whose ``duration`` ran out);
2. the allocator decides (the fold's next cycle, at the last sequence); its
   binds and evictions, then its ``CycleCompleted`` (after ``PendingReasons``
   parts when its reasons are many), go onto the log;
3. the fleet confirms the decisions (evictions release at once, pipelined
   binds land after them) and the confirmations go onto the log;
4. the clock advances by ``time_step``.

The run stops after a cycle that changed nothing while no job waits for
time to pass, or after ``max_cycles``.

Cycle ``n`` runs at clock ``(n - 1) * time_step``. With ``config.skip_idle``
(``muster simulate --skip-idle``), after a cycle that changed nothing the
clock jumps to the first step at or after ``next_change``, the next moment
time alone can change anything (a completion, an arrival, the end of a
stale-gang grace, a preemption delay or a min-runtime): the cycles in
between would decide nothing, so the binds and evictions, their clocks and
cycle numbers, and the result are those of stepping every ``time_step``;
only ``cycles_run`` (how many cycles ran) tells them apart. Two cases
step all the same: time-based fair share with a job waiting (any cycle may
reorder the queues it competes in), and, with time-based fair share on, the
step just before the landing (a pod evicted at a cycle closes its usage at
the clock of the cycle before, as stepping records it).
"""

from __future__ import annotations

import gc
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import msgspec

from muster import events as ev
from muster.cycle_record import cycle_record
from muster.fleet.sim import SimFleet
from muster.scenario import model as m
from muster.scenario.convert import allocator_config, scenario_events
from muster.scheduler.config import AllocatorConfig

if TYPE_CHECKING:
    from muster.scheduler.engine import Allocator

# -- the result, in the shape spec/scenario-format.md prints -----------------


class PodPlacement(msgspec.Struct, frozen=True, kw_only=True):
    node: str
    gpus: list[int]


class JobResult(msgspec.Struct, frozen=True, kw_only=True):
    status: str
    """running | pending | preempted | completed"""
    pods: list[PodPlacement]
    reason: str | None


class Eviction(msgspec.Struct, frozen=True, kw_only=True):
    job: str
    cycle: int
    action: str
    for_job: str | None = msgspec.field(default=None, name="for")
    reason: str = ""
    """Which rule allowed it, in words (an extension of the spec's shape)."""


class QueueResult(msgspec.Struct, frozen=True, kw_only=True):
    fair_share: dict[str, float]
    allocated: dict[str, float]


class SimulationResult(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    scenario: str
    cycles: int
    """The number of the last cycle: as many as stepping every ``time_step`` runs."""
    time: float
    jobs: dict[str, JobResult]
    evictions: list[Eviction]
    queues: dict[str, QueueResult]
    cycles_run: int | None = None
    """With ``skip_idle``: the cycles that ran (the others would have decided nothing); else absent."""


def to_json(result: SimulationResult | list[SimulationResult]) -> bytes:
    """The ``--json`` document, indented."""
    return msgspec.json.format(msgspec.json.encode(result), indent=2)


_LANDING_MARGIN = 1e-6
"""Seconds before a change's moment at which a skip already stops: a step early costs one idle cycle, a
step late would move a decision, so float rounding of the clock's sum must only ever err early."""


# -- the log ------------------------------------------------------------------


@dataclass
class EventLog:
    """The in-process bus: an append-only list addressed by sequence (from 1)."""

    events: list[ev.Event] = field(default_factory=list)

    @property
    def last_seq(self) -> int:
        return len(self.events)

    def append(self, event: ev.Event) -> int:
        self.events.append(event)
        return len(self.events)


@dataclass
class _JobHistory:
    """What the confirmations say about each job, for its final status."""

    evicted: set[str] = field(default_factory=set)
    completed: set[str] = field(default_factory=set)

    def apply(self, event: ev.Event) -> None:
        if isinstance(event, ev.PodEvicted):
            self.evicted.add(event.job)
        elif isinstance(event, ev.PodCompleted):
            self.completed.add(event.job)


class Simulation:
    """One simulation: the log and everyone reading it. ``run()`` drives it;
    afterwards ``log`` holds every event in order (a replayable history)."""

    def __init__(
        self, scenario: m.Scenario, config: AllocatorConfig | None = None, *, skip_idle: bool | None = None
    ) -> None:
        from muster.scheduler.engine import Allocator
        from muster.scheduler.fold import AllocatorFold

        self.scenario = scenario
        self.log = EventLog()
        engine = Allocator(config or allocator_config(scenario))
        self.fold = AllocatorFold(engine, engine.pool_label)
        self.fleet = SimFleet()
        self.history = _JobHistory()
        self.evictions: list[Eviction] = []
        self.reasons: dict[str, str] = {}
        """The last cycle's reason for each pending job."""
        self._recorded: tuple[int, set[tuple[str, str, str | None]]] = (-1, set())
        """(cycle, the evictions recorded in it as (job, action, for)), so a cycle skips repeats."""
        self.skip_idle = scenario.config.skip_idle if skip_idle is None else skip_idle
        self.cycles_run = 0

    @property
    def allocator(self) -> Allocator:
        return self.fold.engine

    def publish(self, events: list[ev.Event]) -> int:
        """Append ``events`` to the log and hand each to every reader; returns how many."""
        for event in events:
            # Each event is a message of its own: the fold's watermark stays the log's last sequence.
            self.fold.fold(self.log.append(event), (event,))
            self.fleet.apply(event)
            self.history.apply(event)
        return len(events)

    def run(self, *, arrivals: bool = False) -> SimulationResult:
        """Cycle until a cycle changes nothing while nothing waits for time, or ``max_cycles`` pass; what
        happened. ``arrivals``: each job's pod group goes onto the log once the clock reaches its
        ``submitted_at``, as a live podgrouper publishes it (else all at the start, ordered by it)."""
        # The log and the state hold every event and job of the run, so each of the collector's full passes
        # walks all of them, while a run leaves almost no cycles of garbage: paused for the run, it
        # finds what little there is on its first pass after (else a quarter of a long trace's time).
        paused = gc.isenabled()
        gc.disable()
        try:
            return self._run(arrivals)
        finally:
            if paused:
                gc.enable()

    def _run(self, arrivals: bool) -> SimulationResult:
        events = scenario_events(self.scenario)
        later: list[ev.PodGroupCreated] = []
        if arrivals:
            later = sorted(
                (e for e in events if isinstance(e, ev.PodGroupCreated)),
                key=lambda e: (e.submitted_at, e.name),
            )
            events = [e for e in events if not isinstance(e, ev.PodGroupCreated)]
        self.publish(events)
        # The fleet reports the pods handed over running before the allocator's first cycle, as the live
        # allocator waits for it to.
        self.publish(self.fleet.step(0.0))
        step, limit = self.scenario.config.time_step, self.scenario.config.max_cycles
        clock, n, due = 0.0, 0, 0
        while n < limit:
            n += 1
            arrived = due
            while due < len(later) and later[due].submitted_at <= clock:
                due += 1
            self.publish(later[arrived:due])
            # Cycle n, skipped ones counted: numbers (which seed random placement) stay those of stepping.
            self.fold.published(n - 1)
            changed = self.cycle(clock)
            self.cycles_run += 1
            upcoming = later[due].submitted_at if due < len(later) else None
            moment = None if changed else self.next_change(clock, upcoming)
            clock += step
            if not changed and moment is None:
                break
            if self.skip_idle and not changed and not self.allocator.fair_share_moves_with_time():
                # With time-based fair share, land a step early: see the module's docstring.
                ahead = step if self.allocator.config.fairness is not None else 0.0
                while n < limit and clock + ahead < moment - _LANDING_MARGIN:
                    n += 1
                    clock += step
        result = self.result(n, clock)
        return msgspec.structs.replace(result, cycles_run=self.cycles_run) if self.skip_idle else result

    def cycle(self, clock: float) -> bool:
        """The next cycle at ``clock`` (every cycle is recorded, so numbered 1, 2, ...); whether it changed
        anything."""
        changed = self.publish(self.fleet.step(clock))
        out = self.fold.cycle(clock, epoch=0)
        n = out.completed.cycle
        decisions = list(out.decisions)
        self._record_evictions(decisions, n)
        # Recorded as the live allocator records it: decisions, reasons in parts when many, CycleCompleted.
        self.publish(cycle_record(decisions, out.completed))
        changed += len(decisions)
        self.reasons = dict(out.reasons)
        changed += self.publish(self.fleet.step(clock))
        return changed > 0

    def _record_evictions(self, decisions: list[ev.Event], n: int) -> None:
        # what this cycle recorded so far: cycles only count up, so an older cycle's set is never asked again
        if self._recorded[0] != n:
            self._recorded = (n, set())
        seen = self._recorded[1]
        for d in decisions:
            if isinstance(d, ev.EvictionRequested) and (d.job, d.action, d.for_job) not in seen:
                seen.add((d.job, d.action, d.for_job))
                self.evictions.append(
                    Eviction(job=d.job, cycle=n, action=d.action, for_job=d.for_job, reason=d.reason)
                )

    def waiting_for_time(self, clock: float) -> bool:
        """Whether a later clock alone could change anything (see ``next_change``)."""
        return self.next_change(clock) is not None

    def next_change(self, clock: float, arrival: float | None = None) -> float | None:
        """The earliest clock at which time alone can change what happens: the fleet's next completion,
        ``arrival`` (the next job's submission, when jobs arrive), the allocator's next deadline (at or
        before ``clock``: the next cycle may already decide); None when nothing waits for time."""
        moments = (self.fleet.next_due(), arrival, self.allocator.next_deadline(clock))
        return min((t for t in moments if t is not None), default=None)

    def result(self, cycles: int, clock: float) -> SimulationResult:
        snapshot = self.allocator.snapshot()
        pods: dict[str, list[PodPlacement]] = {}
        for pod in self.fleet.bound():
            pods.setdefault(pod.job, []).append(PodPlacement(node=pod.node, gpus=list(pod.gpus)))
        jobs = {}
        for job in self.scenario.jobs:
            placed = pods.get(job.name, [])
            status = self._status(job.name, placed)
            reason = None
            if status != "running" and status != "completed":
                view = snapshot.jobs.get(job.name)
                reason = (view.reason if view else None) or self.reasons.get(job.name)
            jobs[job.name] = JobResult(status=status, pods=placed, reason=reason)
        queues = {}
        for queue in self.scenario.queues:
            info = snapshot.queues.get(queue.name)
            queues[queue.name] = QueueResult(
                fair_share=_amounts(info.fair_share if info else {}),
                allocated=_amounts(info.allocated if info else {}),
            )
        return SimulationResult(
            scenario=self.scenario.name,
            cycles=cycles,
            time=clock,
            jobs=jobs,
            evictions=list(self.evictions),
            queues=queues,
        )

    def _status(self, job: str, placed: list[PodPlacement]) -> str:
        if placed:
            return "running"
        if job in self.history.completed:
            return "completed"
        if job in self.history.evicted:
            return "preempted"
        return "pending"


def _amounts(values: dict[str, float]) -> dict[str, float]:
    return {str(k): float(v) for k, v in values.items()}


def simulate(scenario: m.Scenario, *, skip_idle: bool | None = None) -> SimulationResult:
    """Run ``scenario`` until it settles or ``max_cycles`` pass; what happened. ``skip_idle`` overrides
    the scenario's ``config.skip_idle``."""
    return Simulation(scenario, skip_idle=skip_idle).run()
