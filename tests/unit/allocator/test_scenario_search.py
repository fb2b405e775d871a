"""How the victim solver searches (KAI §20): probe sizes, generators in order, failed proposals skipped."""

from __future__ import annotations

from pathlib import Path

from muster.scenario.load import load_scenario, parse_scenario
from muster.scheduler.actions import solver
from muster.simulate import simulate

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"


def run(name: str):
    return simulate(load_scenario(SCENARIOS / f"{name}.yaml"))


def evicted(out) -> set[str]:
    return {e.job for e in out.evictions}


def test_probe_sizes_jump_from_two_pods_to_the_whole_gang_and_spare_a_victim():
    out = run("reclaim-probe-sizes-skip-a-victim-one-by-one-would-take")
    assert evicted(out) == {"a-a", "a-b", "a-s2"}
    assert out.jobs["a-s1"].status == "running"
    assert out.jobs["gang"].status == "running"


def test_multi_node_gang_frees_two_nodes_no_node_local_proposal_frees_together():
    out = run("reclaim-multi-node-gang-frees-two-nodes-of-one-rack")
    assert evicted(out) == {"a-1", "a-2", "a-3"}
    assert out.jobs["rack-gang"].status == "running"
    assert sorted(p.node for p in out.jobs["rack-gang"].pods) == ["node-3", "node-4"]


def test_a_proposal_that_failed_for_the_job_is_not_simulated_again(monkeypatch):
    tried: list[tuple] = []
    failed: set[tuple] = set()
    real = solver._simulate

    def watched(s, stmt, job, want, victims, why, all_must_move):
        key = (job.name, tuple(want), frozenset((u.job.name, u.pods) for u in victims))
        tried.append(key)
        moved = real(s, stmt, job, want, victims, why, all_must_move)
        if moved is None:
            failed.add(key)
        return moved

    monkeypatch.setattr(solver, "_simulate", watched)
    out = run("reclaim-multi-node-gang-frees-two-nodes-of-one-rack")
    assert out.jobs["rack-gang"].status == "running"
    assert failed
    assert all(tried.count(key) == 1 for key in failed)


def test_after_a_failed_probe_the_solver_bisects_then_asks_for_the_whole_job(monkeypatch):
    # four 1-GPU victims, one per node, newest first: two pods fit after a and b; all four need c and d
    # too, which sit on two nodes, so no node-local proposal adds both at once
    nodes = [{"name": f"node-{i}", "resources": {"gpu": 1}} for i in range(1, 5)]
    victims = [
        {"name": f"a-{x}", "queue": "team-a", "submitted_at": 4 - i, "pods": [{"resources": {"gpu": 1}}],
         "running": [{"node": f"node-{i + 1}", "gpus": [0]}]}
        for i, x in enumerate("abcd")
    ]  # fmt: skip
    scenario = parse_scenario(
        {
            "name": "bisection",
            "config": {"actions": ["allocate", "reclaim"]},
            "nodes": nodes,
            "queues": [
                {"name": "team-a", "resources": {"gpu": {"quota": 0}}},
                {"name": "team-b", "resources": {"gpu": {"quota": 4}}},
            ],
            "jobs": [
                *victims,
                {
                    "name": "gang",
                    "queue": "team-b",
                    "submitted_at": 5,
                    "pods": [{"count": 4, "resources": {"gpu": 1}}],
                },
            ],
        }
    )
    sizes: list[int] = []
    real = solver._probe

    def watched(search, propose, want, recorded):
        found = real(search, propose, want, recorded)
        sizes.append(len(want))
        return found

    monkeypatch.setattr(solver, "_probe", watched)
    out = simulate(scenario)
    assert out.jobs["gang"].status == "running"
    assert sizes == [1, 2, 4, 3, 4]
