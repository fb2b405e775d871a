"""How fast replay re-derives a history: events per second over a simulated log.

The log comes from a run of the real allocator and simulated fleet (the
demo workload, scaled), grouped into messages by subject the way the live
services publish them, so replay does exactly what it does on a live log.
"""

from __future__ import annotations

import time

from muster import events as ev
from muster.demo import demo_scenario
from muster.replay import LoggedMessage, replay
from muster.scenario import parse_scenario
from muster.simulate import Simulation
from muster.subjects import Subjects

SUBJECTS = Subjects("muster")


def _subject(event: ev.Event) -> str:
    match event:
        case ev.NodeRegistered() | ev.NodeUpdated() | ev.NodeRemoved():
            return SUBJECTS.nodes("default")
        case ev.QueueUpserted() | ev.QueueDeleted():
            return SUBJECTS.queues
        case ev.PodGroupCreated() | ev.PodGroupDeleted():
            return SUBJECTS.podgroups
        case ev.BindRequested() | ev.EvictionRequested() | ev.PendingReasons() | ev.CycleCompleted():
            return SUBJECTS.decisions("default")
    return SUBJECTS.pods("default")


def simulated_log(nodes: int, jobs: int) -> list[LoggedMessage]:
    """A history as the live system would log it; a message's sequence is the index of its last event."""
    simulation = Simulation(
        parse_scenario({**demo_scenario(nodes=nodes, jobs=jobs), "config": {"max_cycles": 10_000}})
    )
    simulation.run()
    return as_logged(simulation.log.events)


def as_logged(events: list[ev.Event]) -> list[LoggedMessage]:
    """A simulation's events as messages: consecutive events of one subject share a message, up to the end
    of a cycle's record; a message's sequence is the index of its last event."""
    messages: list[LoggedMessage] = []
    for index, event in enumerate(events, start=1):
        subject = _subject(event)
        if (
            messages
            and messages[-1].subject == subject
            and not isinstance(messages[-1].events[-1], ev.CycleCompleted)
        ):
            messages[-1] = LoggedMessage(index, subject, [*messages[-1].events, event])
        else:
            messages.append(LoggedMessage(index, subject, [event]))
    return messages


def run(quick: bool = False) -> list[dict]:
    nodes, jobs = (8, 200) if quick else (64, 5000)
    log = simulated_log(nodes, jobs)
    started = time.perf_counter()
    report = replay(log, SUBJECTS)
    seconds = time.perf_counter() - started
    return [
        {
            "name": f"replay {report.events} events, {report.cycles} cycles ({nodes} nodes, {jobs} jobs)",
            "value": round(report.events / seconds, 1),
            "unit": "events/s",
            "target": 100_000,
            "divergences": report.divergences,
        }
    ]
