"""What if history had run under another configuration or other queues?

The log's inputs — nodes, queues, and every job with the time it was
submitted and how long it ran — are played again through the real
allocator and the simulated fleet, jobs arriving at their original times:
once under the recorded settings (the baseline) and once under the other
ones. The report compares the two, per job (when it started, where) and per
queue (GPU-hours received within the recorded window), and shows the
recorded GPU-hours beside them. Each re-run's log reads as a live one
(``muster.report.simulated``), so ``WhatIfRun.reports`` gives ``muster
report``'s figures of both (``muster replay --report``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import msgspec

from muster import events as ev
from muster import mig
from muster.replay import LoggedMessage
from muster.report import Report, build_report
from muster.report.simulated import ReportedSimulation
from muster.scenario import model as m
from muster.scheduler.config import AllocatorConfig

STEP = 1.0  # seconds of simulated time per cycle of the what-if run


@dataclass
class Outcome:
    """What happened to the jobs and queues over a history."""

    starts: dict[str, float] = field(default_factory=dict)
    nodes: dict[str, list[str]] = field(default_factory=dict)
    gpu_seconds: dict[str, float] = field(default_factory=dict)


@dataclass
class History:
    """The inputs a log holds, and what the recorded decisions made of them."""

    nodes: list[ev.NodeSpec]
    queues: list[ev.QueueSpec]
    jobs: list[ev.PodGroupCreated]
    """With ``duration`` set to the run time the log shows (or kept, for simulated jobs)."""
    start: float
    end: float
    outcome: Outcome
    config: AllocatorConfig


def _clock_of(event: ev.Event) -> float | None:
    match event:
        case ev.CycleCompleted(clock=clock):
            return clock
        case ev.PodBound(at=at) | ev.PodCompleted(at=at) if at:
            return at
    return None


def overlap(begin: float, end: float, window_start: float, window_end: float) -> float:
    """Seconds of the run [``begin``, ``end``) that fall inside the window: none for a run wholly
    before or after it."""
    return max(0.0, min(end, window_end) - max(begin, window_start))


class _Usage:
    """GPU-seconds per queue that pods ran inside a window, from binds and releases.

    A re-run goes on past the window (jobs pending at its end start later), so a run is counted
    only for the part of it inside the window: a pod bound after the window's end adds nothing, and
    one still running at the end adds up to the end.
    """

    def __init__(self, jobs: dict[str, ev.PodGroupCreated], start: float, end: float):
        self.jobs = jobs
        self.start, self.end = start, end
        self.running: dict[tuple[str, int], float] = {}
        self.outcome = Outcome()

    def _gpu(self, job: str, pod: int) -> float:
        group = self.jobs.get(job)
        if group is None:
            return 0.0
        specs = [s for s in group.pods for _ in range(s.count)]
        if not 0 <= pod < len(specs):
            return 0.0
        r = specs[pod].resources
        return mig.pod_gpus(r.gpu, r.extended)

    def see(self, event: ev.Event, clock: float) -> None:
        match event:
            case ev.PodBound(job=job, pod=pod, node=node):
                self.running[(job, pod)] = clock
                if job not in self.outcome.starts:
                    self.outcome.starts[job] = clock
                if self.outcome.starts[job] == clock:
                    self.outcome.nodes.setdefault(job, []).append(node)
            case (
                ev.PodCompleted(job=job, pod=pod)
                | ev.PodEvicted(job=job, pod=pod)
                | ev.PodFailed(job=job, pod=pod)
            ):
                self._stop(job, pod, clock)

    def _stop(self, job: str, pod: int, clock: float) -> None:
        started = self.running.pop((job, pod), None)
        if started is None or job not in self.jobs:
            return
        queue = self.jobs[job].queue
        ran = overlap(started, clock, self.start, self.end)
        self.outcome.gpu_seconds[queue] = self.outcome.gpu_seconds.get(queue, 0.0) + self._gpu(job, pod) * ran

    def close(self) -> Outcome:
        """The outcome, every pod still running counted up to the window's end."""
        for job, pod in list(self.running):
            self._stop(job, pod, self.end)
        for job in self.outcome.nodes:
            self.outcome.nodes[job].sort()
        return self.outcome


@dataclass
class _Inputs:
    """What a log says, event by event: the settings, queues, nodes and jobs it holds, and how long
    each job ran."""

    nodes: dict[str, ev.NodeSpec] = field(default_factory=dict)
    queues: dict[str, ev.QueueSpec] = field(default_factory=dict)
    jobs: dict[str, ev.PodGroupCreated] = field(default_factory=dict)
    runs: dict[str, float] = field(default_factory=dict)
    bound_at: dict[tuple[str, int], float] = field(default_factory=dict)
    config: AllocatorConfig = field(default_factory=AllocatorConfig)

    def read(self, event: ev.Event) -> None:
        match event:
            case ev.NodeRegistered(node=n) | ev.NodeUpdated(node=n):
                self.nodes.setdefault(n.name, n)
            case ev.QueueUpserted(queue=q):
                self.queues[q.name] = q
            case ev.QueueDeleted(name=name):
                self.queues.pop(name, None)
            case ev.PodGroupCreated() if event.name not in self.jobs:
                self.jobs[event.name] = event
            case ev.AllocatorConfigured(config=c):
                self.config = msgspec.convert(c, AllocatorConfig)
            case ev.PodBound(job=job, pod=pod, at=at):
                self.bound_at[(job, pod)] = at
            case ev.PodCompleted(job=job, pod=pod, at=at) if (job, pod) in self.bound_at:
                self.runs[job] = max(self.runs.get(job, 0.0), at - self.bound_at[(job, pod)])


def read_history(log: list[LoggedMessage]) -> History:
    """The inputs of a recorded history and its outcome."""
    inputs = _Inputs()
    timeline: list[tuple[float, ev.Event]] = []
    clock = None
    for event in (e for message in sorted(log, key=lambda x: x.seq) for e in message.events):
        seen = _clock_of(event)
        clock = clock if seen is None else seen
        inputs.read(event)
        if clock is not None:
            timeline.append((clock, event))
    start = min([j.submitted_at for j in inputs.jobs.values()] or [clock or 0.0])
    end = clock if clock is not None else start
    usage = _Usage(inputs.jobs, start, end)
    for at, event in timeline:
        usage.see(event, at)
    timed = [
        j if j.duration is not None else msgspec.structs.replace(j, duration=inputs.runs.get(j.name))
        for j in sorted(inputs.jobs.values(), key=lambda j: (j.submitted_at, j.name))
    ]
    return History(
        list(inputs.nodes.values()),
        list(inputs.queues.values()),
        timed,
        start,
        end,
        usage.close(),
        inputs.config,
    )


class _TimedSimulation(ReportedSimulation):
    """A simulation whose jobs arrive at their submission times (its log reportable as a live one)."""

    def replay(self, history: History, queues: list[ev.QueueSpec]) -> Outcome:
        self.publish([ev.NodeRegistered(node=n) for n in history.nodes])
        self.publish([ev.QueueUpserted(queue=q) for q in queues])
        usage = _Usage({j.name: j for j in history.jobs}, history.start, history.end)
        arrivals = list(history.jobs)
        clock = history.start
        longest = max([j.duration or 0.0 for j in arrivals] or [0.0])
        horizon = history.end + longest + STEP
        while clock <= horizon:
            due = [j for j in arrivals if j.submitted_at <= clock]
            arrivals = arrivals[len(due) :]
            self.publish(due)
            before = self.log.last_seq
            changed = self.cycle(clock)
            for event in self.log.events[before:]:
                usage.see(event, clock)
            if not arrivals and not changed and not self.waiting_for_time(clock):
                break
            clock += STEP
        return usage.close()


START_CATEGORIES = (
    "started_earlier",
    "started_later",
    "unchanged",
    "no_longer_started",
    "started_only_after",
    "started_in_neither",
)
"""How a job's start compares between the baseline and the what-if; every job is in exactly one."""


def start_category(delta: float | None, started_before: bool, started_after: bool) -> str:
    """The category of a job whose start moved by ``delta`` seconds (None unless it started in both)."""
    if started_before and started_after:
        assert delta is not None
        return "started_earlier" if delta < 0 else "started_later" if delta > 0 else "unchanged"
    if started_before:
        return "no_longer_started"
    return "started_only_after" if started_after else "started_in_neither"


class QueuesLeftOut(ValueError):
    """The other queues leave out queues that are live at the end of the history."""

    def __init__(self, names: list[str]):
        super().__init__(f"leaves out live queues: {', '.join(names)}")
        self.names = names


def queues_left_out(live: list[ev.QueueSpec], others: list[ev.QueueSpec]) -> list[str]:
    """The names of the ``live`` queues that ``others`` has no queue for, sorted."""
    kept = {q.name for q in others}
    return sorted(q.name for q in live if q.name not in kept)


def _job_report(job: ev.PodGroupCreated, before: Outcome, after: Outcome) -> dict:
    b, a = before.starts.get(job.name), after.starts.get(job.name)
    delta = None if a is None or b is None else round(a - b, 3)
    return {
        "queue": job.queue,
        "category": start_category(delta, b is not None, a is not None),
        "waited_before": None if b is None else round(b - job.submitted_at, 3),
        "waited_after": None if a is None else round(a - job.submitted_at, 3),
        "start_delta": delta,
        "nodes_before": before.nodes.get(job.name, []),
        "nodes_after": after.nodes.get(job.name, []),
    }


def _queue_report(names: list[str], history: History, before: Outcome, after: Outcome) -> dict:
    def hours(outcome: Outcome, queue: str) -> float:
        return round(outcome.gpu_seconds.get(queue, 0.0) / 3600, 4)

    return {
        q: {
            "gpu_hours_before": hours(before, q),
            "gpu_hours_after": hours(after, q),
            "gpu_hours_delta": round(
                (after.gpu_seconds.get(q, 0.0) - before.gpu_seconds.get(q, 0.0)) / 3600, 4
            ),
            "gpu_hours_recorded": hours(history.outcome, q),
        }
        for q in names
    }


@dataclass
class WhatIfRun:
    """The two re-runs of a history: under its own settings (before) and the other ones (after)."""

    history: History
    queues: list[ev.QueueSpec]
    """The queues of the what-if."""
    dropped: list[str]
    before: Outcome
    after: Outcome
    before_log: list[ev.Event]
    after_log: list[ev.Event]

    def reports(self) -> tuple[Report, Report]:
        """``muster report``'s figures of each re-run, over the whole of it (it goes on past the recorded
        window until its jobs are done or the longest one could have been)."""
        return build_report(self.before_log), build_report(self.after_log)


def run_what_if(
    log: list[LoggedMessage],
    *,
    config: AllocatorConfig | None = None,
    queues: list[ev.QueueSpec] | None = None,
    drop_queues: bool = False,
) -> WhatIfRun:
    """The recorded history re-run under its own settings and under ``config`` / ``queues``.

    Raises QueuesLeftOut when ``queues`` leaves out a queue live at the end of the history, whose jobs
    would be stranded, unless ``drop_queues`` says to drop them.
    """
    history = read_history(log)
    replayed_queues = list(queues) if queues is not None else history.queues
    dropped = queues_left_out(history.queues, replayed_queues)
    if dropped and not drop_queues:
        raise QueuesLeftOut(dropped)
    # Compare like with like: the history re-run under its own settings, then under the other ones.
    # (The recorded outcome also depends on real cycle timing, which a re-run only approximates.)
    baseline = _TimedSimulation(m.Scenario(name="as-recorded"), config=history.config)
    before = baseline.replay(history, history.queues)
    other = _TimedSimulation(m.Scenario(name="what-if"), config=config or history.config)
    after = other.replay(history, replayed_queues)
    return WhatIfRun(history, replayed_queues, dropped, before, after, baseline.log.events, other.log.events)


def what_if(
    log: list[LoggedMessage],
    *,
    config: AllocatorConfig | None = None,
    queues: list[ev.QueueSpec] | None = None,
    drop_queues: bool = False,
) -> dict:
    """Per job and per queue, how the recorded history would have changed under ``config`` / ``queues``.

    Raises QueuesLeftOut as ``run_what_if`` does.
    """
    return what_if_document(run_what_if(log, config=config, queues=queues, drop_queues=drop_queues))


def what_if_document(run: WhatIfRun) -> dict:
    """The what-if's report (``muster replay --config/--queues --json``)."""
    history, before, after, dropped = run.history, run.before, run.after, run.dropped
    jobs = {job.name: _job_report(job, before, after) for job in history.jobs}
    names = sorted(
        {
            *before.gpu_seconds,
            *after.gpu_seconds,
            *history.outcome.gpu_seconds,
            *(q.name for q in run.queues),
        }
    )
    counts = {c: sum(1 for j in jobs.values() if j["category"] == c) for c in START_CATEGORIES}
    return {
        "window_seconds": round(history.end - history.start, 3),
        "dropped_queues": dropped,
        "jobs": jobs,
        "queues": _queue_report(names, history, before, after),
        "summary": {
            "jobs": len(jobs),
            **counts,
            "never_started_after": counts["no_longer_started"] + counts["started_in_neither"],
            "placement_changed": sum(1 for j in jobs.values() if j["nodes_before"] != j["nodes_after"]),
        },
    }
