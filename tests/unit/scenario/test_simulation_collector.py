"""A simulation pauses Python's cyclic garbage collector while it runs: the log and the state hold every
event and job of the run, so each full pass of the collector would walk all of them, and a run leaves
almost no cycles of garbage behind. The collector is given back as the run found it."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest
from muster.scenario.load import load_scenario
from muster.simulate import Simulation

SCENARIO = Path(__file__).parents[2] / "scenarios" / "duration-runs-a-queue-of-jobs-to-the-end.yaml"


class _Watched(Simulation):
    """Notes whether the collector was on at each cycle."""

    collecting: list[bool]

    def cycle(self, clock: float) -> bool:
        self.collecting.append(gc.isenabled())
        return super().cycle(clock)


def _run() -> _Watched:
    simulation = _Watched(load_scenario(str(SCENARIO)))
    simulation.collecting = []
    simulation.run()
    return simulation


@pytest.fixture
def collector_restored():
    was = gc.isenabled()
    yield
    (gc.enable if was else gc.disable)()


def test_the_collector_is_paused_for_every_cycle_and_back_on_after_the_run(collector_restored):
    gc.enable()
    simulation = _run()
    assert simulation.collecting and not any(simulation.collecting)
    assert gc.isenabled()


def test_a_collector_paused_before_the_run_stays_paused_after_it(collector_restored):
    gc.disable()
    _run()
    assert not gc.isenabled()
