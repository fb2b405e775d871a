"""Whose queue values protect a running job (KAI §9): preempt from the job's leaf up; reclaim from the
child of the reclaimer's and the victim's lowest common ancestor up (or, resolved by queue, as preempt)."""

from __future__ import annotations

import msgspec
import pytest
from muster import events as ev
from muster.scheduler.actions.victims import min_runtime
from muster.scheduler.config import AllocatorConfig
from muster.scheduler.queue_accounting import QueueTable
from muster.scheduler.state import ClusterState

from .builders import gang_job, queue


def q(name: str, parent: str | None = None, reclaim: float | None = None, preempt: float | None = None):
    e = queue(name, parent=parent)
    mr = ev.MinRuntime(reclaim=reclaim, preempt=preempt) if (reclaim, preempt) != (None, None) else None
    return msgspec.structs.replace(e, queue=msgspec.structs.replace(e.queue, min_runtime=mr))


# org (reclaim 100)            other (reclaim 50)
#  ├ dept-1 (reclaim 300, preempt 40)  └ team-4
#  │  ├ team-1 (reclaim 600)
#  │  └ team-2               spare
#  └ dept-2                     ├ team-5 (reclaim 700)
#     └ team-3                  └ team-6
QUEUES = [
    q("org", reclaim=100),
    q("dept-1", "org", reclaim=300, preempt=40),
    q("team-1", "dept-1", reclaim=600),
    q("team-2", "dept-1"),
    q("dept-2", "org"),
    q("team-3", "dept-2"),
    q("other", reclaim=50),
    q("team-4", "other"),
    q("spare"),
    q("team-5", "spare", reclaim=700),
    q("team-6", "spare"),
]
JOBS = {"in-1": "team-1", "in-2": "team-2", "in-3": "team-3", "in-5": "team-5", "in-6": "team-6"}


@pytest.fixture
def world():
    state = ClusterState()
    for e in [*QUEUES, *(gang_job(leaf, 1, name=name) for name, leaf in JOBS.items())]:
        state.apply(e)
    table = QueueTable.build(state.queues)
    return state, table


LCA = AllocatorConfig()
BY_QUEUE = AllocatorConfig(reclaim_min_runtime_resolution="queue")


def reclaim_by(world, victim: str, reclaimer: str, config: AllocatorConfig = LCA) -> float:
    state, table = world
    return min_runtime(state, table, state.jobs[victim], "reclaim", config, table.index[reclaimer])


def test_a_sibling_reclaimer_meets_the_value_set_on_the_victims_own_queue(world):
    assert reclaim_by(world, "in-1", "team-2") == 600


def test_a_cousin_reclaimer_meets_the_value_of_the_victims_side_below_their_common_ancestor(world):
    assert reclaim_by(world, "in-1", "team-3") == 300


def test_a_reclaimer_under_another_top_level_queue_meets_only_the_victims_top_level_value(world):
    assert reclaim_by(world, "in-1", "team-4") == 100


def test_without_a_value_below_the_common_ancestor_the_walk_goes_up_from_there(world):
    assert reclaim_by(world, "in-2", "team-1") == 300


def test_resolved_by_queue_the_victims_own_value_holds_against_every_reclaimer(world):
    assert [reclaim_by(world, "in-1", r, BY_QUEUE) for r in ("team-2", "team-3", "team-4")] == [600] * 3


def test_preempt_walks_up_from_the_victims_leaf_whoever_preempts(world):
    state, table = world
    assert min_runtime(state, table, state.jobs["in-1"], "preempt", LCA) == 40
    assert min_runtime(state, table, state.jobs["in-1"], "preempt", LCA, table.index["team-4"]) == 40


def test_a_jobs_own_min_runtime_overrides_its_queues(world):
    state, table = world
    state.jobs["in-1"].min_runtime = 7.0
    assert reclaim_by(world, "in-1", "team-3") == 7.0


DEFAULTS = AllocatorConfig(default_preempt_min_runtime=90, default_reclaim_min_runtime=80)


def test_with_no_preempt_value_on_the_victims_path_the_default_protects(world):
    # KAI: resolver_test "getPreemptMinRuntime when no queue is found: should return the default value"
    state, table = world
    assert min_runtime(state, table, state.jobs["in-3"], "preempt", DEFAULTS) == 90


def test_a_preempt_value_on_the_victims_path_overrides_the_default(world):
    # KAI: resolver_test "getPreemptMinRuntime when queue inherits from parent" (a default set beside it)
    state, table = world
    assert min_runtime(state, table, state.jobs["in-1"], "preempt", DEFAULTS) == 40


def test_across_top_level_queues_an_unset_victim_top_level_queue_meets_the_default(world):
    # KAI: resolver_test "with top-level victim queue having no reclaim min runtime: should fall back to
    # default value"; the victim's own leaf value lies below the top level and is not looked at
    assert reclaim_by(world, "in-5", "team-1", DEFAULTS) == 80


def test_with_nothing_set_from_the_common_ancestors_child_up_the_reclaim_default_protects(world):
    assert reclaim_by(world, "in-6", "team-5", DEFAULTS) == 80


def test_resolved_by_queue_an_unset_path_meets_the_reclaim_default(world):
    by_queue = AllocatorConfig(reclaim_min_runtime_resolution="queue", default_reclaim_min_runtime=80)
    assert reclaim_by(world, "in-6", "team-1", by_queue) == 80
    assert reclaim_by(world, "in-5", "team-1", by_queue) == 700


def test_a_job_whose_queue_is_unknown_meets_the_default(world):
    # KAI: resolver_test "when queue is nil: should return an error and the default value"
    state, table = world
    state.jobs["in-6"].queue = "gone"
    assert min_runtime(state, table, state.jobs["in-6"], "preempt", DEFAULTS) == 90


def test_a_jobs_own_min_runtime_overrides_the_default(world):
    state, table = world
    state.jobs["in-3"].min_runtime = 7.0
    assert min_runtime(state, table, state.jobs["in-3"], "preempt", DEFAULTS) == 7.0
