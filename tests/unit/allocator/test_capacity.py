"""The capacity rule (limits, quotas, over-quota) that every action and the batch kernel call.

Queues 0 <- 1 <- 2: queue 2 is a leaf under 1, which sits under the top-level 0.
Each case runs compiled (as the batch kernel runs it) and as Python (as the actions run it).
"""

from __future__ import annotations

import numpy as np
import pytest
from muster.scheduler.capacity import capacity_reason, first_exceeded, holds_over, quota_reason, stays_within
from muster.tolerances import EPS, UNLIMITED

from .builders import GI, allocator, gang_job, gpu_nodes, queue

CHAIN = [2, 1, 0]
NONE = [UNLIMITED, UNLIMITED, UNLIMITED]


@pytest.fixture(params=["compiled", "python"])
def check(request):
    if request.param == "compiled":
        return lambda chain, cap, used, req: first_exceeded(
            np.array(chain, dtype=np.int64), np.array(cap), np.array(used), np.array(req, dtype=np.float64)
        )
    return lambda chain, cap, used, req: first_exceeded.py_func(chain, cap, used, req)


def test_a_request_under_every_limit_fits(check):
    cap = [[8.0, UNLIMITED, UNLIMITED], [4.0, UNLIMITED, UNLIMITED], [2.0, UNLIMITED, UNLIMITED]]
    used = [[1.0, 0, 0], [1.0, 0, 0], [1.0, 0, 0]]
    assert tuple(check(CHAIN, cap, used, [1.0, 0, 0])) == (-1, -1)


def test_a_limit_at_an_ancestor_blocks_a_request_the_leaf_allows(check):
    cap = [NONE, [4.0, UNLIMITED, UNLIMITED], NONE]
    used = [[4.0, 0, 0], [3.0, 0, 0], [0.0, 0, 0]]
    assert tuple(check(CHAIN, cap, used, [2.0, 0, 0])) == (1, 0)


def test_the_leaf_is_checked_before_its_ancestors(check):
    cap = [[1.0, UNLIMITED, UNLIMITED], NONE, [1.0, UNLIMITED, UNLIMITED]]
    used = [[1.0, 0, 0], [1.0, 0, 0], [1.0, 0, 0]]
    assert tuple(check(CHAIN, cap, used, [1.0, 0, 0])) == (2, 0)


def test_the_first_resource_over_is_named(check):
    cap = [NONE, NONE, [UNLIMITED, 4000.0, 1024.0]]
    used = [[0, 0, 0], [0, 0, 0], [0.0, 4000.0, 1024.0]]
    assert tuple(check(CHAIN, cap, used, [0.0, 1000.0, 1.0])) == (2, 1)


def test_an_unlimited_queue_takes_any_request(check):
    cap = [NONE, NONE, NONE]
    used = [[1e9, 1e9, 1e9]] * 3
    assert tuple(check(CHAIN, cap, used, [1e9, 1e9, 1e9])) == (-1, -1)


def test_a_resource_the_job_does_not_ask_for_never_blocks_it(check):
    cap = [NONE, NONE, [0.0, UNLIMITED, UNLIMITED]]
    used = [[0, 0, 0], [0, 0, 0], [5.0, 0, 0]]
    assert tuple(check(CHAIN, cap, used, [0.0, 1000.0, 0.0])) == (-1, -1)


def test_a_request_filling_the_limit_exactly_fits_despite_float_sums(check):
    cap = [NONE, NONE, [0.3, UNLIMITED, UNLIMITED]]
    used = [[0, 0, 0], [0, 0, 0], [0.1 + 0.1, 0, 0]]  # 0.2 + 0.1 > 0.3 by one ulp
    assert 0.1 + 0.1 + 0.1 > 0.3
    assert tuple(check(CHAIN, cap, used, [0.1, 0, 0])) == (-1, -1)


def test_a_request_past_the_limit_by_more_than_the_tolerance_is_over(check):
    cap = [NONE, NONE, [2.0, UNLIMITED, UNLIMITED]]
    used = [[0, 0, 0], [0, 0, 0], [2.0, 0, 0]]
    assert tuple(check(CHAIN, cap, used, [10 * EPS, 0, 0])) == (2, 0)


def test_a_queue_at_its_share_does_not_hold_over_it():
    assert not holds_over(4.0, 4.0 + EPS / 2)
    assert holds_over(4.0, 4.0 + 10 * EPS)


def test_no_queue_holds_over_an_unlimited_share():
    assert not holds_over(UNLIMITED, 1e12)


def test_a_request_stays_within_a_quota_it_fills_exactly():
    assert stays_within(2.0, 1.5, 0.5)
    assert not stays_within(2.0, 1.5, 0.5 + 10 * EPS)


def test_any_request_stays_within_an_unlimited_quota():
    assert stays_within(UNLIMITED, 1e12, 1e12)


# -- the reasons the actions give, read off a session ------------------------------------------


def _session_with(*jobs):
    a = allocator(
        gpu_nodes(1, gpus=8),
        queue("dept", gpu_quota=4, gpu_limit=3),
        queue("team", gpu_quota=2, parent="dept"),
        *jobs,
    )
    return a._session(0.0), a.state.jobs


def test_a_non_preemptible_job_over_its_queues_quota_is_refused_with_the_quota_named():
    s, jobs = _session_with(gang_job("team", pods=3, gpu=1, name="j", preemptible=False))
    why = capacity_reason(s, jobs["j"], (3.0, 1000.0, float(GI)))
    assert why is not None and why.startswith(
        "the job is not preemptible and queue team would exceed its quota"
    )


def test_a_preemptible_job_may_go_over_quota():
    s, jobs = _session_with(gang_job("team", pods=3, gpu=1, name="j", preemptible=True))
    assert quota_reason(s, jobs["j"], (3.0, 1000.0, float(GI))) is None
    assert capacity_reason(s, jobs["j"], (3.0, 1000.0, float(GI))) is None


def test_a_limit_at_the_parent_is_named_before_any_quota():
    s, jobs = _session_with(gang_job("team", pods=4, gpu=1, name="j", preemptible=False))
    why = capacity_reason(s, jobs["j"], (4.0, 1000.0, float(GI)))
    assert why == "queue dept is at its limit of 3 gpu (0 in use, the job needs 4 more)"
