"""Reclaim, preempt and consolidate pass over a cycle's walk when no waiting job could get past their first
tests (``passes_over``); that shortcut must never change a decision, a reason, or a cycle's record.

Each run is compared, event by event, with the same run where every action walks every waiting job.
"""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path

import pytest
from muster.scenario import load_scenario, parse_scenario
from muster.scheduler.actions.consolidate import ConsolidateAction
from muster.scheduler.actions.preempt import PreemptAction
from muster.scheduler.actions.reclaim import ReclaimAction
from muster.simulate import Simulation

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"
ACTIONS = (ReclaimAction, PreemptAction, ConsolidateAction)
# every scenario: whichever rule makes one of the three actions act or hold back, its shortcut must agree
EXERCISED = sorted(SCENARIOS.glob("*.yaml"))


ALONE = [None, ["allocate", "reclaim"], ["allocate", "preempt"], ["allocate", "consolidate"]]
"""Each action alone after allocate, too: a job held back by its delay has it noted by whichever action
walks, so a shortcut that forgot the delay would hide behind the others' walks."""


def contended(seed: int, actions: list[str] | None = None) -> dict:
    """A small cluster kept over-full by jobs of mixed priorities, sizes and queues (some over their quota,
    some under), some with a preemption delay or a min-runtime, arriving over time and completing;
    ``actions``: those the allocator runs (default: all)."""
    rng = random.Random(seed)
    queues = [{"name": "dept-a"}, {"name": "dept-b"}]
    for i, (parent, quota) in enumerate([("dept-a", 4), ("dept-a", 0), ("dept-b", 8), ("dept-b", 2)]):
        queues.append({"name": f"team-{i}", "parent": parent, "resources": {"gpu": {"quota": quota}}})
    jobs = []
    for i in range(120):
        gpus = rng.choice([1, 1, 2, 4, 8])
        pods = [{"count": 2, "resources": {"gpu": gpus // 2}}] if gpus >= 4 and rng.random() < 0.4 else None
        job = {
            "name": f"job-{i:03d}",
            "queue": f"team-{rng.randrange(4)}",
            "priority": rng.choice([50, 50, 100, 150]),
            "submitted_at": rng.randrange(0, 3000, 30),
            "duration": rng.randrange(120, 1800, 60),
            "pods": pods or [{"count": 1, "resources": {"gpu": gpus}}],
        }
        if rng.random() < 0.15:
            job["preemption_delay"] = rng.choice([60, 300])
        if rng.random() < 0.15:
            job["min_runtime"] = rng.choice([120, 600])
        jobs.append(job)
    return {
        "name": f"contended-{seed}",
        "config": {"time_step": 30, "max_cycles": 2000, **({"actions": actions} if actions else {})},
        "nodes": [{"name": f"node-{i}", "resources": {"gpu": 8}} for i in range(3)],
        "queues": queues,
        "jobs": jobs,
    }


def run(scenario, *, arrivals: bool = False):
    simulation = Simulation(scenario, skip_idle=True)
    result = simulation.run(arrivals=arrivals)
    return result, simulation.log.events


def walking_every_job(monkeypatch) -> None:
    for action in ACTIONS:
        monkeypatch.setattr(action, "passes_over", lambda self, s: False)


def counting(monkeypatch) -> Counter:
    """Count, per action, the cycles its shortcut passed over."""
    passed: Counter = Counter()
    for action in ACTIONS:

        def passes_over(self, s, _real=action.passes_over):
            skip = _real(self, s)
            passed[self.name] += skip
            return skip

        monkeypatch.setattr(action, "passes_over", passes_over)
    return passed


@pytest.mark.parametrize("path", EXERCISED, ids=lambda p: p.stem)
def test_passing_over_decides_as_walking_every_job(path, monkeypatch):
    shortcut = run(load_scenario(path))
    walking_every_job(monkeypatch)
    assert run(load_scenario(path)) == shortcut


@pytest.mark.parametrize("actions", ALONE, ids=lambda a: "+".join(a) if a else "all")
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_passing_over_decides_as_walking_every_job_on_a_contended_cluster(seed, actions, monkeypatch):
    shortcut = run(parse_scenario(contended(seed, actions)), arrivals=True)
    walking_every_job(monkeypatch)
    assert run(parse_scenario(contended(seed, actions)), arrivals=True) == shortcut


def held_back_where_nothing_could_be_evicted(actions: list[str]) -> dict:
    """A full node of one queue's preemptible job and, behind it, a job of the same queue and priority in
    its preemption delay: no action could evict anyone for it, and each one that walks notes the delay."""
    return {
        "name": "held-back",
        "config": {"time_step": 30, "max_cycles": 5, "actions": actions},
        "nodes": [{"name": "node-a", "resources": {"gpu": 8}}],
        "queues": [{"name": "team-a", "resources": {"gpu": {"quota": 8}}}],
        "jobs": [
            {
                "name": "runs",
                "queue": "team-a",
                "priority": 50,
                "duration": 600,
                "pods": [{"resources": {"gpu": 8}}],
                "running": [{"node": "node-a", "gpus": list(range(8))}],
            },
            {
                "name": "waits",
                "queue": "team-a",
                "priority": 50,
                "submitted_at": 0,
                "preemption_delay": 3600,
                "pods": [{"resources": {"gpu": 1}}],
            },
        ],
    }


@pytest.mark.parametrize("actions", ALONE[1:], ids=lambda a: "+".join(a))
def test_an_action_with_no_victim_for_anyone_still_notes_a_job_held_back_by_its_delay(actions, monkeypatch):
    shortcut = run(parse_scenario(held_back_where_nothing_could_be_evicted(actions)))
    assert "preemption delay" in shortcut[0].jobs["waits"].reason
    walking_every_job(monkeypatch)
    assert run(parse_scenario(held_back_where_nothing_could_be_evicted(actions))) == shortcut


def test_the_runs_compared_pass_over_walks_of_every_action_and_act_in_others(monkeypatch):
    passed = counting(monkeypatch)
    evictions: Counter = Counter()
    for scenario in [*map(load_scenario, EXERCISED), *(parse_scenario(contended(s)) for s in (1, 2, 3))]:
        result, _ = run(scenario, arrivals=scenario.name.startswith("contended"))
        evictions.update(e.action for e in result.evictions)
    assert all(passed[a.name] > 0 for a in ACTIONS), passed
    assert all(evictions[a.name] > 0 for a in ACTIONS), evictions


def test_a_shortcut_that_passes_over_walks_it_should_not_is_caught(monkeypatch):
    # the comparison above can fail: passing over every walk loses the evictions these runs make
    shortcut = run(parse_scenario(contended(1)), arrivals=True)
    for action in ACTIONS:
        monkeypatch.setattr(action, "passes_over", lambda self, s: True)
    assert run(parse_scenario(contended(1)), arrivals=True) != shortcut
