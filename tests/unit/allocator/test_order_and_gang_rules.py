"""The homes of queue order, job order, elastic state and gang pipelining, as the actions and the batch
kernel both read them (compiled for the kernel, ``py_func`` for Python)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from muster.scheduler.gang import elastic_state, pipelines_whole_gang
from muster.scheduler.ordering import job_order, queue_key, smaller_share
from muster.tolerances import UNLIMITED

INF = float("inf")
amounts = st.sampled_from([UNLIMITED, 0.0, 0.5, 1.0, 2.0, 4.0, 8.0])
rows = st.lists(amounts, min_size=3, max_size=3)


def _key(alloc, fair, quota, allocatable, req, neg_priority=-100, total=(16.0, 64000.0, 2.0**40)):
    return queue_key.py_func(alloc, fair, quota, allocatable, total, neg_priority, req)


def test_a_queue_over_its_fair_share_in_every_resource_goes_last():
    over = _key([4.0, 4.0, 4.0], [2.0, 2.0, 2.0], [8.0] * 3, [8.0] * 3, [1.0, 0, 0])
    under_in_one = _key([4.0, 1.0, 4.0], [2.0, 2.0, 2.0], [8.0] * 3, [8.0] * 3, [1.0, 0, 0])
    assert over[0] == 1 and under_in_one[0] == 0
    assert under_in_one < over


def test_a_queue_the_job_takes_beyond_its_quota_goes_after_one_within():
    beyond = _key([1.0, 0, 0], [0.0] * 3, [2.0, UNLIMITED, UNLIMITED], [8.0] * 3, [2.0, 0, 0])
    within = _key([0.0, 0, 0], [0.0] * 3, [2.0, UNLIMITED, UNLIMITED], [8.0] * 3, [2.0, 0, 0])
    assert (beyond[1], within[1]) == (1, 0)


def test_an_unlimited_quota_holds_any_request():
    assert _key([100.0, 0, 0], [0.0] * 3, [UNLIMITED] * 3, [UNLIMITED] * 3, [50.0, 0, 0])[1] == 0


def test_higher_priority_orders_first_among_equal_shares():
    low = _key([0.0] * 3, [1.0] * 3, [1.0] * 3, [1.0] * 3, [0.0] * 3, neg_priority=-100)
    high = _key([0.0] * 3, [1.0] * 3, [1.0] * 3, [1.0] * 3, [0.0] * 3, neg_priority=-200)
    assert high < low


def test_asking_for_a_resource_without_share_is_marked_and_dominates():
    key = _key([0.0] * 3, [0.0] * 3, [0.0] * 3, [0.0, UNLIMITED, UNLIMITED], [1.0, 0, 0])
    assert key[3] == 1
    assert key[4] == 1000.0  # DRF's no-share multiplier


def test_dominant_share_reads_an_unlimited_share_as_the_cluster_total():
    key = _key([4.0, 0, 0], [0.0] * 3, [UNLIMITED] * 3, [UNLIMITED] * 3, [4.0, 0, 0], total=(16.0, 1.0, 1.0))
    assert key[4:] == (0.5, 0.25)


@settings(max_examples=200, deadline=None)
@given(rows, rows, rows, rows, rows, st.integers(-300, 0))
def test_the_kernel_computes_the_queue_key_python_computes(
    alloc, fair, quota, allocatable, req, neg_priority
):
    alloc = [abs(a) for a in alloc]
    req = [abs(r) for r in req]
    total = np.array([16.0, 8.0, 4.0])
    arrays = [np.array(x, dtype=np.float64) for x in (alloc, fair, quota, allocatable)]
    compiled = queue_key(*arrays, total, neg_priority, np.array(req, dtype=np.float64))
    assert compiled == queue_key.py_func(alloc, fair, quota, allocatable, total.tolist(), neg_priority, req)


def test_the_smaller_allocatable_share_orders_first_only_when_smaller_in_every_resource():
    assert smaller_share.py_func((1.0, 1.0, INF), (2.0, 1.0, INF)) == 1
    assert smaller_share.py_func((2.0, 1.0, INF), (1.0, 1.0, INF)) == -1
    assert smaller_share.py_func((1.0, 2.0, INF), (2.0, 1.0, INF)) == 0
    assert smaller_share(np.array([1.0, 2.0, 3.0]), np.array([1.0, 2.0, 3.0])) == 0


def test_job_order_is_priority_then_elastic_state_then_age_then_name():
    first = job_order.py_func(-200, 2, 9.0, "z")
    assert first < job_order.py_func(-100, 0, 0.0, "a")
    assert job_order.py_func(-100, 0, 9.0, "z") < job_order.py_func(-100, 1, 0.0, "a")
    assert job_order.py_func(-100, 1, 0.0, "z") < job_order.py_func(-100, 1, 1.0, "a")
    assert job_order.py_func(-100, 1, 0.0, "a") < job_order.py_func(-100, 1, 0.0, "b")
    assert job_order(-100, 1, 0.0, 3) < job_order(-100, 1, 0.0, 4)


def test_elastic_state_is_below_at_or_above_the_minimum_for_one_job_or_many():
    assert [elastic_state(a, 2) for a in (0, 1, 2, 3)] == [0, 0, 1, 2]
    states = elastic_state(np.array([0, 1, 2, 3]), np.array([2, 2, 2, 2]))
    assert states.tolist() == [0, 0, 1, 2]
    assert states.dtype == np.int64


def test_a_gang_is_pipelined_whole_when_part_waits_and_too_few_would_run():
    for check in (pipelines_whole_gang, pipelines_whole_gang.py_func):
        assert check(True, 1, 2)
        assert not check(True, 2, 2)  # enough pods run: only the waiting ones are pipelined
        assert not check(False, 0, 2)  # nothing waits for releasing room
