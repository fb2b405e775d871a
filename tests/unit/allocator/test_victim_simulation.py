"""The victim solver simulates the evicting job together with its victims, in queue order (KAI §6.3, §7, §8)."""

from __future__ import annotations

from pathlib import Path

import pytest
from muster.scenario.load import load_scenario, parse_scenario, read_document
from muster.scheduler.config import GPU_POLICIES
from muster.simulate import simulate

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"


def run(name: str):
    return simulate(load_scenario(SCENARIOS / f"{name}.yaml"))


def test_a_job_at_its_queue_limit_preempts_a_lower_priority_job_of_that_queue():
    out = run("preempt-at-the-queue-limit")
    assert out.jobs["urgent"].status == "running"
    assert {(e.job, e.action, e.for_job) for e in out.evictions} == {("low-gang", "preempt", "urgent")}


def test_preempt_never_leaves_the_queue_over_its_limit():
    # the victim is too small: evicting it leaves the queue at 3 of 4, and the preemptor needs 2
    scenario = parse_scenario(
        {
            "name": "preempt-cannot-clear-the-limit",
            "nodes": [{"name": "n", "resources": {"gpu": 8}}],
            "queues": [{"name": "q", "resources": {"gpu": {"quota": 4, "limit": 4}}}],
            "jobs": [
                {"name": "keep", "queue": "q", "priority": 125, "pods": [{"count": 3, "resources": {"gpu": 1}}],
                 "running": [{"node": "n", "gpus": [0]}, {"node": "n", "gpus": [1]}, {"node": "n", "gpus": [2]}]},
                {"name": "low", "queue": "q", "priority": 50, "pods": [{"resources": {"gpu": 1}}],
                 "running": [{"node": "n", "gpus": [3]}]},
                {"name": "mid", "queue": "q", "priority": 75, "submitted_at": 1,
                 "pods": [{"count": 2, "resources": {"gpu": 1}}]},
            ],
        }
    )  # fmt: skip
    out = simulate(scenario)
    assert out.jobs["mid"].status == "pending"
    assert out.evictions == []
    assert out.queues["q"].allocated["gpu"] == 4


def test_a_victim_whose_queue_orders_first_is_placed_again_first_and_can_fail_the_reclaim():
    out = run("reclaim-victim-queue-ordered-first-takes-back-its-room")
    assert out.jobs["latecomer"].status == "pending"
    assert out.evictions == []


def test_consolidation_moves_a_job_before_reclaim_would_kill_one():
    out = run("consolidation-moves-before-reclaim-kills")
    assert [(e.job, e.action) for e in out.evictions] == [("b2", "consolidate")]
    assert all(job.status == "running" for job in out.jobs.values())


def test_without_consolidation_reclaim_moves_the_victim_it_can_place_again():
    data = load_scenario(SCENARIOS / "consolidation-moves-before-reclaim-kills.yaml")
    scenario = parse_scenario(
        {
            "name": data.name,
            "config": {"actions": ["allocate", "reclaim", "preempt", "stale_gang_eviction"]},
            "nodes": [{"name": n.name, "resources": {"gpu": 4}} for n in data.nodes],
            "queues": [
                {"name": "team-a", "resources": {"gpu": {"quota": 6}}},
                {"name": "team-b", "resources": {"gpu": {"quota": 2, "over_quota_weight": 0}}},
            ],
            "jobs": [
                {"name": "b1", "queue": "team-b", "pods": [{"resources": {"gpu": 2}}],
                 "running": [{"node": "n1", "gpus": [0, 1]}]},
                {"name": "b2", "queue": "team-b", "submitted_at": 1, "pods": [{"resources": {"gpu": 2}}],
                 "running": [{"node": "n2", "gpus": [0, 1]}]},
                {"name": "a1", "queue": "team-a", "submitted_at": 2, "pods": [{"resources": {"gpu": 4}}]},
            ],
        }
    )  # fmt: skip
    out = simulate(scenario)
    assert [(e.job, e.action) for e in out.evictions] == [("b2", "reclaim")]
    assert all(job.status == "running" for job in out.jobs.values())


@pytest.mark.parametrize("placement", ["binpack", *GPU_POLICIES])
def test_consolidation_packs_a_spread_gang_onto_one_node_under_every_packing_placement(placement):
    data = read_document(SCENARIOS / "consolidate-packs-a-spread-gang-onto-one-node.yaml")
    out = simulate(parse_scenario({**data, "config": {"placement": {"gpu": placement}}}))
    assert [(e.job, e.action, e.for_job) for e in out.evictions] == [("gang", "consolidate", "whole")]
    assert {p.node for p in out.jobs["gang"].pods} == {"node-a"}
    assert out.jobs["whole"].status == "running"
