"""Every scenario in tests/scenarios/ holds under ``muster simulate --check``.

Each file states one rule of the scheduler in prose (``description``) and
pins it with ``expect``; this runs them through the real allocator.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from muster.events import CycleCompleted, encode_event
from muster.scenario.expect import check
from muster.scenario.load import load_scenario
from muster.simulate import Simulation, simulate

SCENARIOS = Path(__file__).parent / "scenarios"
FILES = sorted(SCENARIOS.glob("*.yaml"))
MUSTER = Path(sys.executable).parent / "muster"


def test_there_are_at_least_forty_scenarios():
    assert len(FILES) >= 40


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_scenario_holds(path: Path):
    scenario = load_scenario(path)
    assert scenario.description.strip(), "a scenario says in prose what it pins"
    assert scenario.expect is not None, "a scenario pins its outcome with expect"
    assert scenario.name == path.stem, "a scenario's name is its file name"
    failures = check(scenario.expect, simulate(scenario))
    assert not failures, "\n".join(str(f) for f in failures)


def test_the_muster_command_checks_scenarios():
    files = [str(SCENARIOS / "gang-all-or-nothing.yaml"), str(SCENARIOS / "fair-share-multi-level.yaml")]
    done = subprocess.run(
        [str(MUSTER), "simulate", "--check", *files], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("PASS ") == 2


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_the_allocator_sees_what_the_fleet_runs(path: Path):
    sim = Simulation(load_scenario(path))
    result = sim.run()
    snapshot = sim.allocator.snapshot()
    for name, job in result.jobs.items():
        fleet = sorted((p.node, tuple(p.gpus)) for p in job.pods)
        seen = sorted((p.node, tuple(p.gpus)) for p in snapshot.jobs[name].pods)
        assert seen == fleet, name


def test_a_simulation_is_deterministic_down_to_the_bytes_of_its_log():
    scenario = load_scenario(SCENARIOS / "duration-runs-a-queue-of-jobs-to-the-end.yaml")
    first, second = Simulation(scenario), Simulation(scenario)
    assert first.run() == second.run()
    assert [encode_event(e) for e in first.log.events] == [encode_event(e) for e in second.log.events]


def test_each_cycle_records_the_watermark_it_read_and_its_clock():
    sim = Simulation(load_scenario(SCENARIOS / "duration-completes-job-and-frees-room.yaml"))
    result = sim.run()
    cycles = [(seq, e) for seq, e in enumerate(sim.log.events, start=1) if isinstance(e, CycleCompleted)]
    assert [e.cycle for _, e in cycles] == list(range(1, result.cycles + 1))
    assert [e.clock for _, e in cycles] == [float(n) for n in range(result.cycles)]
    for seq, e in cycles:
        assert e.watermark < seq
