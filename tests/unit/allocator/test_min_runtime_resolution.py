"""Whose queue values protect a running job (KAI §9): preempt from the job's leaf up; reclaim from the
child of the reclaimer's and the victim's lowest common ancestor up (or, resolved by queue, as preempt)."""

from __future__ import annotations

import msgspec
import pytest
from muster import events as ev
from muster.scheduler.actions.victims import min_runtime
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
#  │  └ team-2
#  └ dept-2
#     └ team-3
QUEUES = [
    q("org", reclaim=100),
    q("dept-1", "org", reclaim=300, preempt=40),
    q("team-1", "dept-1", reclaim=600),
    q("team-2", "dept-1"),
    q("dept-2", "org"),
    q("team-3", "dept-2"),
    q("other", reclaim=50),
    q("team-4", "other"),
]


@pytest.fixture
def world():
    state = ClusterState()
    for e in [*QUEUES, gang_job("team-1", 1, name="in-1"), gang_job("team-2", 1, name="in-2")]:
        state.apply(e)
    table = QueueTable.build(state.queues)
    return state, table


def reclaim_by(world, victim: str, reclaimer: str, lca: bool = True) -> float:
    state, table = world
    return min_runtime(state, table, state.jobs[victim], "reclaim", table.index[reclaimer], lca)


def test_a_sibling_reclaimer_meets_the_value_set_on_the_victims_own_queue(world):
    assert reclaim_by(world, "in-1", "team-2") == 600


def test_a_cousin_reclaimer_meets_the_value_of_the_victims_side_below_their_common_ancestor(world):
    assert reclaim_by(world, "in-1", "team-3") == 300


def test_a_reclaimer_under_another_top_level_queue_meets_only_the_victims_top_level_value(world):
    assert reclaim_by(world, "in-1", "team-4") == 100


def test_without_a_value_below_the_common_ancestor_the_walk_goes_up_from_there(world):
    assert reclaim_by(world, "in-2", "team-1") == 300


def test_resolved_by_queue_the_victims_own_value_holds_against_every_reclaimer(world):
    assert [reclaim_by(world, "in-1", r, lca=False) for r in ("team-2", "team-3", "team-4")] == [600] * 3


def test_preempt_walks_up_from_the_victims_leaf_whoever_preempts(world):
    state, table = world
    assert min_runtime(state, table, state.jobs["in-1"], "preempt") == 40
    assert min_runtime(state, table, state.jobs["in-1"], "preempt", table.index["team-4"]) == 40


def test_a_jobs_own_min_runtime_overrides_its_queues(world):
    state, table = world
    state.jobs["in-1"].min_runtime = 7.0
    assert reclaim_by(world, "in-1", "team-3") == 7.0
