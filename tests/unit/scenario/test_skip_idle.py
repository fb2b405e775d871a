"""Skipping idle time (``config.skip_idle``) decides exactly what stepping every ``time_step`` decides.

Each run is compared with its stepping twin: the same binds (job, pod, node, devices, clock), the same
evictions (job, pod, action, clock) and the same result, only ``cycles_run`` told apart.
"""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest
from muster import events as ev
from muster.bench.history import paced_scenario
from muster.scenario import parse_scenario
from muster.scenario.load import load_scenario
from muster.simulate import Simulation

SCENARIOS = sorted((Path(__file__).parents[2] / "scenarios").glob("*.yaml"))


def _decisions(simulation: Simulation) -> tuple[list[tuple], list[tuple]]:
    """Binds and evictions on the log, each with the clock of the cycle that decided it."""
    binds, evictions, open_ = [], [], []
    for event in simulation.log.events:
        if isinstance(event, ev.BindRequested | ev.EvictionRequested):
            open_.append(event)
        elif isinstance(event, ev.CycleCompleted):
            for d in open_:
                if isinstance(d, ev.BindRequested):
                    binds.append((d.job, d.pod, d.node, tuple(d.gpus), event.clock))
                else:
                    evictions.append((d.job, d.pod, d.action, event.clock))
            open_ = []
    return binds, evictions


def _both(scenario, *, arrivals: bool = False):
    stepped = Simulation(scenario, skip_idle=False)
    skipped = Simulation(scenario, skip_idle=True)
    return (stepped, stepped.run(arrivals=arrivals)), (skipped, skipped.run(arrivals=arrivals))


def _assert_same(scenario, *, arrivals: bool = False) -> tuple[int, int]:
    (stepped, fixed), (skipped, skip) = _both(scenario, arrivals=arrivals)
    assert _decisions(skipped) == _decisions(stepped)
    assert msgspec.structs.replace(skip, cycles_run=None) == fixed
    assert fixed.cycles_run is None and skip.cycles_run == skipped.cycles_run
    return fixed.cycles, skipped.cycles_run


@pytest.mark.parametrize("path", SCENARIOS, ids=[p.stem for p in SCENARIOS])
def test_skipping_idle_cycles_decides_as_stepping_on_every_scenario(path):
    _assert_same(load_scenario(str(path)))


def _arriving_workload(jobs: int, *, fairness: bool, min_runtime: bool = False) -> dict:
    """The demo mix arriving over time on a cluster too small for it, so jobs wait, reclaim and preempt."""
    doc = paced_scenario(jobs, nodes=4, pace=20.0, seed=3)
    doc["config"]["time_step"] = 7.0
    if fairness:
        doc["config"]["fairness"] = {"usage_window": 3000.0, "half_life": 600.0, "k": 1.0}
    if min_runtime:
        for queue in doc["queues"]:
            queue["min_runtime"] = {"preempt": 95.0, "reclaim": 130.0}
    return doc


@pytest.mark.parametrize(
    ("fairness", "min_runtime"), [(False, False), (False, True), (True, False), (True, True)]
)
def test_skipping_idle_cycles_decides_as_stepping_when_jobs_arrive_over_time(fairness, min_runtime):
    scenario = parse_scenario(_arriving_workload(60, fairness=fairness, min_runtime=min_runtime))
    cycles, ran = _assert_same(scenario, arrivals=True)
    assert ran < cycles  # idle stretches exist and were skipped


def _one_job(*, duration: float, max_cycles: int, time_step: float):
    return parse_scenario(
        {
            "name": "one-job",
            "config": {"max_cycles": max_cycles, "time_step": time_step},
            "nodes": [{"name": "n", "resources": {"gpu": 1}}],
            "queues": [{"name": "q"}],
            "jobs": [{"name": "j", "queue": "q", "duration": duration, "pods": [{"resources": {"gpu": 1}}]}],
        }
    )


def test_skip_idle_runs_fewer_cycles_and_reports_both_counts():
    (_, fixed), (_, skip) = _both(_one_job(duration=500, max_cycles=1000, time_step=1.0))
    assert fixed.cycles == skip.cycles == 502
    assert skip.jobs["j"].status == "completed"
    assert skip.cycles_run is not None and skip.cycles_run < 10


def test_skipping_stops_at_max_cycles_as_stepping_does():
    (_, fixed), (_, skip) = _both(_one_job(duration=10_000, max_cycles=50, time_step=2.0))
    assert (skip.cycles, skip.time) == (fixed.cycles, fixed.time) == (50, 100.0)
    assert skip.jobs["j"].status == "running"


def test_the_command_line_flag_skips_idle_time_and_says_how_many_cycles_ran(tmp_path, capsys):
    from muster.cli.simulate_cmd import main

    path = tmp_path / "one-job.json"
    path.write_text(
        '{"name": "one-job", "config": {"max_cycles": 1000}, "nodes": [{"name": "n", "resources": {"gpu": 1}}],'
        ' "queues": [{"name": "q"}], "jobs": [{"name": "j", "queue": "q", "duration": 500,'
        ' "pods": [{"resources": {"gpu": 1}}]}]}'
    )
    assert main([str(path)]) == 0
    assert "scenario one-job: 502 cycles, time 502" in capsys.readouterr().out
    assert main(["--skip-idle", str(path)]) == 0
    assert "scenario one-job: 502 cycles (4 run), time 502" in capsys.readouterr().out
