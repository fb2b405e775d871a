"""What if history had run under another configuration or other queues?

The log's inputs — nodes, queues, and every job with the time it was
submitted and how long it ran — are played again through the real
allocator and the simulated fleet, jobs arriving at their original times:
once under the recorded settings (the baseline) and once under the other
ones. The report compares the two, per job (when it started, where) and per
queue (GPU-hours received within the recorded window), and shows the
recorded GPU-hours beside them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import msgspec

from muster import events as ev
from muster.replay import LoggedMessage
from muster.scenario import model as m
from muster.scheduler.config import AllocatorConfig
from muster.simulate import Simulation

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


class _Usage:
    """GPU-seconds per queue from binds and releases, integrated up to a horizon."""

    def __init__(self, jobs: dict[str, ev.PodGroupCreated]):
        self.jobs = jobs
        self.running: dict[tuple[str, int], float] = {}
        self.outcome = Outcome()

    def _gpu(self, job: str, pod: int) -> float:
        group = self.jobs.get(job)
        if group is None:
            return 0.0
        specs = [s for s in group.pods for _ in range(s.count)]
        return specs[pod].resources.gpu if 0 <= pod < len(specs) else 0.0

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
        if started is not None and job in self.jobs:
            queue = self.jobs[job].queue
            self.outcome.gpu_seconds[queue] = self.outcome.gpu_seconds.get(queue, 0.0) + self._gpu(
                job, pod
            ) * (clock - started)

    def close(self, horizon: float) -> Outcome:
        for job, pod in list(self.running):
            self._stop(job, pod, horizon)
        for job in self.outcome.nodes:
            self.outcome.nodes[job].sort()
        return self.outcome


def read_history(log: list[LoggedMessage]) -> History:
    """The inputs of a recorded history and its outcome."""
    nodes: dict[str, ev.NodeSpec] = {}
    queues: dict[str, ev.QueueSpec] = {}
    jobs: dict[str, ev.PodGroupCreated] = {}
    runs: dict[str, float] = {}
    bound_at: dict[tuple[str, int], float] = {}
    config = AllocatorConfig()
    clock = None
    events = [e for message in sorted(log, key=lambda x: x.seq) for e in message.events]
    usage = _Usage(jobs)
    for event in events:
        clock = _clock_of(event) or clock
        match event:
            case ev.NodeRegistered(node=n) | ev.NodeUpdated(node=n):
                nodes.setdefault(n.name, n)
            case ev.QueueUpserted(queue=q):
                queues[q.name] = q
            case ev.PodGroupCreated() if event.name not in jobs:
                jobs[event.name] = event
            case ev.AllocatorConfigured(config=c):
                config = msgspec.convert(c, AllocatorConfig)
            case ev.PodBound(job=job, pod=pod, at=at):
                bound_at[(job, pod)] = at
            case ev.PodCompleted(job=job, pod=pod, at=at) if (job, pod) in bound_at:
                runs[job] = max(runs.get(job, 0.0), at - bound_at[(job, pod)])
        if clock is not None:
            usage.see(event, clock)
    start = min([j.submitted_at for j in jobs.values()] or [clock or 0.0])
    end = clock if clock is not None else start
    timed = [
        j if j.duration is not None else msgspec.structs.replace(j, duration=runs.get(j.name))
        for j in sorted(jobs.values(), key=lambda j: (j.submitted_at, j.name))
    ]
    return History(list(nodes.values()), list(queues.values()), timed, start, end, usage.close(end), config)


class _TimedSimulation(Simulation):
    """A simulation whose jobs arrive at their submission times."""

    def replay(self, history: History, queues: list[ev.QueueSpec]) -> Outcome:
        self.publish([ev.NodeRegistered(node=n) for n in history.nodes])
        self.publish([ev.QueueUpserted(queue=q) for q in queues])
        usage = _Usage({j.name: j for j in history.jobs})
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
        return usage.close(history.end)


def what_if(
    log: list[LoggedMessage],
    *,
    config: AllocatorConfig | None = None,
    queues: list[ev.QueueSpec] | None = None,
) -> dict:
    """Per job and per queue, how the recorded history would have changed under ``config`` / ``queues``."""
    history = read_history(log)
    replayed_queues = list(queues) if queues is not None else history.queues
    # Compare like with like: the history re-run under its own settings, then under the other ones.
    # (The recorded outcome also depends on real cycle timing, which a re-run only approximates.)
    before = _TimedSimulation(m.Scenario(name="as-recorded"), config=history.config).replay(
        history, history.queues
    )
    after = _TimedSimulation(m.Scenario(name="what-if"), config=config or history.config).replay(
        history, replayed_queues
    )
    jobs = {}
    for job in history.jobs:
        b, a = before.starts.get(job.name), after.starts.get(job.name)
        jobs[job.name] = {
            "queue": job.queue,
            "waited_before": None if b is None else round(b - job.submitted_at, 3),
            "waited_after": None if a is None else round(a - job.submitted_at, 3),
            "start_delta": None if a is None or b is None else round(a - b, 3),
            "nodes_before": before.nodes.get(job.name, []),
            "nodes_after": after.nodes.get(job.name, []),
        }
    names = sorted({*before.gpu_seconds, *after.gpu_seconds, *(q.name for q in replayed_queues)})
    queues_out = {
        q: {
            "gpu_hours_before": round(before.gpu_seconds.get(q, 0.0) / 3600, 4),
            "gpu_hours_after": round(after.gpu_seconds.get(q, 0.0) / 3600, 4),
            "gpu_hours_delta": round(
                (after.gpu_seconds.get(q, 0.0) - before.gpu_seconds.get(q, 0.0)) / 3600, 4
            ),
        }
        for q in names
    }
    deltas = [j["start_delta"] for j in jobs.values() if j["start_delta"] is not None]
    return {
        "window_seconds": round(history.end - history.start, 3),
        "jobs": jobs,
        "queues": queues_out,
        "summary": {
            "jobs": len(jobs),
            "started_earlier": sum(1 for d in deltas if d < 0),
            "started_later": sum(1 for d in deltas if d > 0),
            "unchanged": sum(1 for d in deltas if d == 0),
            "never_started_after": sum(1 for j in jobs.values() if j["waited_after"] is None),
            "placement_changed": sum(1 for j in jobs.values() if j["nodes_before"] != j["nodes_after"]),
        },
    }
