"""Replay of cycles whose pending reasons were recorded in parts, and of records from before parts existed."""

from __future__ import annotations

import msgspec
import pytest
from muster import events as ev
from muster.bench.replay import SUBJECTS, as_logged
from muster.replay import LoggedMessage, replay
from muster.scenario import parse_scenario
from muster.simulate import Simulation

# Long names make a few thousand reasons outgrow one part's budget: the first cycle records them in parts.
BACKLOG = {
    "name": "capped-backlog",
    "nodes": [{"name": "n-1", "resources": {"gpu": 8, "cpu": 64, "memory": "512Gi"}}],
    "queues": [
        {"name": "capped", "resources": {"gpu": {"quota": 0, "limit": 0}}},
        {"name": "open", "resources": {"gpu": {"quota": 8}}},
    ],
    "jobs": [
        *(
            {"name": f"backlog-{i:04d}-{'x' * 100}", "queue": "capped", "pods": [{"resources": {"gpu": 1}}]}
            for i in range(3_000)
        ),
        {"name": "runs", "queue": "open", "pods": [{"resources": {"gpu": 1}}], "duration": 2},
    ],
}


@pytest.fixture(scope="module")
def log() -> list[LoggedMessage]:
    simulation = Simulation(parse_scenario(BACKLOG))
    simulation.run()
    return as_logged(simulation.log.events)


def parts(log: list[LoggedMessage]) -> list[tuple[int, int]]:
    """(message, index) of every PendingReasons part."""
    return [
        (m, i)
        for m, message in enumerate(log)
        for i, event in enumerate(message.events)
        if isinstance(event, ev.PendingReasons)
    ]


def replaced(log: list[LoggedMessage], m: int, events: list[ev.Event]) -> list[LoggedMessage]:
    """``log`` with message ``m`` carrying ``events`` instead."""
    message = log[m]
    return [*log[:m], LoggedMessage(message.seq, message.subject, events), *log[m + 1 :]]


def test_a_log_with_a_cycle_recorded_in_parts_replays_without_divergence(log):
    assert len(parts(log)) > 1
    report = replay(log, SUBJECTS)
    assert report.cycles > 1
    assert report.divergences == 0, report.first_divergence and report.first_divergence.to_builtins()


def test_a_changed_reason_in_one_part_is_a_divergence(log):
    m, i = parts(log)[-1]
    events = list(log[m].events)
    job = next(iter(events[i].reasons))
    events[i] = msgspec.structs.replace(events[i], reasons={**events[i].reasons, job: "tampered"})
    report = replay(replaced(log, m, events), SUBJECTS)
    # Later cycles, which folded the tampered reason as the one they compare with, diverge too.
    assert report.divergences >= 1
    assert report.first_divergence.cycle == events[i].cycle


def test_a_cycle_recorded_whole_as_before_parts_existed_still_replays(log):
    # Up to NATS' 1 MB, a CycleCompleted carried every reason; such records are compared whole.
    (m, first), *rest = parts(log)
    assert all(n == m for n, _ in rest), "the record's parts share a message"
    events = log[m].events
    completed = events[-1]
    everything = {job: why for part in events[first:-1] for job, why in part.reasons.items()}
    whole = msgspec.structs.replace(
        completed, pending=dict(sorted({**everything, **completed.pending}.items()))
    )
    report = replay(replaced(log, m, [*events[:first], whole]), SUBJECTS)
    assert report.divergences == 0, report.first_divergence and report.first_divergence.to_builtins()
