"""The four sharing policies of ``muster bench philly`` (issue #26), as scenario changes and as outcomes:
strict never borrows, borrowing without reclaim makes a queue wait for its own quota, the default takes
it back by reclaim."""

from __future__ import annotations

import pytest
from muster.bench import philly_outcomes
from muster.bench.philly_outcomes import ROW_KEYS, Workload
from muster.bench.philly_policies import BY_NAME, POLICIES
from muster.bench.philly_trace import TraceJob
from muster.scenario import parse_scenario
from muster.scenario.model import ALL_ACTIONS, FairnessConfig


def base() -> dict:
    return {
        "name": "two",
        "nodes": [{"name": "n1", "resources": {"gpu": 8}}],
        "queues": [
            {"name": "a", "resources": {"gpu": {"quota": 6}}},
            {"name": "tiny", "resources": {"gpu": {"quota": 0}}},
        ],
        "jobs": [],
    }


def test_strict_sets_each_queues_gpu_limit_to_its_quota_and_leaves_the_document_as_it_was():
    doc = base()
    strict = parse_scenario(BY_NAME["strict"].apply(doc))
    assert [(q.resources["gpu"].quota, q.resources["gpu"].limit) for q in strict.queues] == [(6, 6), (0, 0)]
    assert doc == base()


def test_borrowing_without_reclaim_runs_every_default_action_but_reclaim():
    config = parse_scenario(BY_NAME["borrow"].apply(base())).config
    assert config.actions == [a for a in ALL_ACTIONS if a != "reclaim"]
    assert all(
        q.resources["gpu"].limit is None for q in parse_scenario(BY_NAME["borrow"].apply(base())).queues
    )


def test_the_default_runs_kais_actions_and_only_time_fair_turns_on_time_based_fair_share_at_its_defaults():
    default = parse_scenario(BY_NAME["default"].apply(base())).config
    time_fair = parse_scenario(BY_NAME["time-fair"].apply(base())).config
    assert default.actions == list(ALL_ACTIONS) == time_fair.actions
    assert default.fairness is None and time_fair.fairness == FairnessConfig()


def _contended() -> Workload:
    """Two clusters of one node each (quota 8 GPUs each): a fills both nodes with 16 one-hour jobs at 0;
    b submits 8 ten-minute jobs at 10 minutes."""
    jobs = [TraceJob(submitted=0.0, duration=3600.0, gpus=1, cluster="a") for _ in range(16)]
    jobs += [TraceJob(submitted=600.0, duration=600.0, gpus=1, cluster="b") for _ in range(8)]
    return Workload("contended", jobs, {"a": 1, "b": 1}, None)


@pytest.fixture(scope="module")
def outcomes() -> dict[str, dict]:
    return {p.name: philly_outcomes.run_one(_contended(), p, 1).row for p in POLICIES}


def test_a_row_carries_every_figure_the_benchmark_promises(outcomes):
    for name, row in outcomes.items():
        assert tuple(row) == ROW_KEYS
        assert (row["policy"], row["load"], row["jobs"]) == (name, 1, 24)


def test_strict_quotas_never_borrow_so_half_of_as_jobs_wait_for_its_own_quota(outcomes):
    strict = outcomes["strict"]
    assert strict["borrowed_gpu_hours"] == 0.0 and strict["evictions"] == 0
    assert strict["wait_p99_s"] >= 3600  # a's second eight ran after its first


def test_borrowing_without_reclaim_lends_idle_gpus_and_b_waits_for_them_below_its_quota(outcomes):
    borrow = outcomes["borrow"]
    assert borrow["borrowed_gpu_hours"] > 0 and borrow["evictions"] == 0
    assert borrow["quota_violation_s"] >= 3600 - 600 - 60  # b, from its submission to a's first end


def test_the_default_reclaims_what_a_borrowed_so_b_waits_far_less(outcomes):
    default, borrow = outcomes["default"], outcomes["borrow"]
    assert default["evictions"] == 8 and default["gpu_hours_lost_to_eviction"] > 0
    assert default["quota_violation_s"] < borrow["quota_violation_s"] / 10
