"""A simulation run for a report publishes what the live allocator publishes about queues, and decides
exactly as the plain simulation does."""

from __future__ import annotations

from pathlib import Path

from muster import events as ev
from muster.report import build_report
from muster.report.simulated import ReportedSimulation
from muster.scenario.load import load_scenario
from muster.simulate import Simulation

SCENARIO = Path(__file__).resolve().parents[2] / "scenarios" / "reclaim-restores-fair-share.yaml"


def test_its_log_carries_each_queues_fair_share_as_queue_status():
    simulation = ReportedSimulation(load_scenario(SCENARIO))
    simulation.run()
    last = {e.name: e.fair_share["gpu"] for e in simulation.log.events if isinstance(e, ev.QueueStatus)}
    assert last == {"team-a": 4.0, "team-b": 4.0}


def test_a_status_is_published_only_when_it_changed():
    simulation = ReportedSimulation(load_scenario(SCENARIO))
    result = simulation.run()
    by_queue: dict[str, list[ev.QueueStatus]] = {}
    for e in simulation.log.events:
        if isinstance(e, ev.QueueStatus):
            by_queue.setdefault(e.name, []).append(e)
    # The run's last cycle changes nothing: a status sent every cycle would repeat itself.
    assert result.cycles > 1 and by_queue
    assert all(a != b for sent in by_queue.values() for a, b in zip(sent, sent[1:], strict=False))


def test_it_decides_as_the_plain_simulation_does():
    scenario = load_scenario(SCENARIO)
    plain, reported = Simulation(scenario), ReportedSimulation(scenario)
    assert plain.run() == reported.run()
    decisions = (ev.BindRequested, ev.EvictionRequested)
    assert [e for e in plain.log.events if isinstance(e, decisions)] == [
        e for e in reported.log.events if isinstance(e, decisions)
    ]


def test_a_report_on_it_reads_the_reclaim():
    simulation = ReportedSimulation(load_scenario(SCENARIO))
    simulation.run()
    r = build_report(simulation.log.events)
    assert r.deserved_from == "fair_share"
    assert (r.queues["team-a"].evictions, r.queues["team-b"].evictions) == (4, 0)
    assert r.cluster.jobs == 9 and r.cluster.started == 9
