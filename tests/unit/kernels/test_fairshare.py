import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from muster.kernels.fairshare import QueueArrays, fair_share

from . import naive


def arrays(queues: list[dict]) -> QueueArrays:
    return QueueArrays(
        parent=np.array([-1 if q["parent"] is None else q["parent"] for q in queues], dtype=np.int64),
        priority=np.array([q["priority"] for q in queues], dtype=np.int64),
        quota=np.array([q["quota"] for q in queues], dtype=float).reshape(-1, 3),
        limit=np.array([q["limit"] for q in queues], dtype=float).reshape(-1, 3),
        weight=np.array([q["weight"] for q in queues], dtype=float).reshape(-1, 3),
        request=np.array([q["request"] for q in queues], dtype=float).reshape(-1, 3),
        usage=np.array([q.get("usage", [0.0, 0.0, 0.0]) for q in queues], dtype=float).reshape(-1, 3),
    )


def q(gpu_quota=0.0, gpu_request=0.0, *, weight=1.0, limit=-1.0, priority=100, parent=None):
    return {
        "parent": parent,
        "priority": priority,
        "quota": [gpu_quota, -1, -1],
        "limit": [limit, -1, -1],
        "weight": [weight, 1, 1],
        "request": [gpu_request, 0, 0],
    }


def gpu_shares(queues, total_gpu):
    return list(fair_share(arrays(queues), np.array([total_gpu, 0.0, 0.0]))[:, 0])


def test_deserved_quota_is_given_up_to_the_request():
    assert gpu_shares([q(4, 2), q(4, 10)], 8) == [2, 6]


def test_quotas_may_be_oversubscribed_without_clamping():
    assert gpu_shares([q(6, 10), q(6, 10)], 8) == [6, 6]


def test_surplus_splits_by_over_quota_weight():
    assert gpu_shares([q(0, 10, weight=1), q(0, 10, weight=3)], 8) == [2, 6]


def test_weight_zero_never_receives_surplus():
    assert gpu_shares([q(1, 10, weight=0), q(1, 10, weight=1)], 8) == [1, 7]


def test_higher_priority_takes_the_surplus_first():
    assert gpu_shares([q(0, 10, priority=100), q(0, 3, priority=200)], 8) == [5, 3]


def test_limit_caps_fair_share():
    assert gpu_shares([q(0, 10, limit=2), q(0, 10)], 8) == [2, 6]


def test_fractions_round_down_and_leftover_goes_to_the_largest_remainder_then_creation_order():
    # 10 over three equal queues: 3 each, the last unit to the first created
    assert gpu_shares([q(0, 10), q(0, 10), q(0, 10)], 10) == [4, 3, 3]


def test_children_divide_their_parents_fair_share():
    queues = [q(4, 10), q(4, 10), q(0, 10, parent=0), q(0, 10, weight=3, parent=0)]
    # top: 4 + 4 deserved, 4 surplus split equally; dept-0 gets 6, its children 6 split 1:3 floored
    shares = gpu_shares(queues, 12)
    assert shares[:2] == [6, 6]
    assert shares[2] + shares[3] == 6
    assert shares[3] > shares[2]


def test_past_usage_shifts_the_surplus_toward_the_queue_that_used_less():
    heavy = {**q(0, 8), "usage": [1.0, 0.0, 0.0]}
    light = q(0, 8)
    got = fair_share(arrays([heavy, light]), np.array([8.0, 0.0, 0.0]), k=0.5)[:, 0]
    assert list(got) == [2, 6]


def test_usage_does_not_touch_deserved_quota():
    heavy = {**q(4, 8), "usage": [1.0, 0.0, 0.0]}
    got = fair_share(arrays([heavy, q(4, 8)]), np.array([8.0, 0.0, 0.0]), k=1.0)[:, 0]
    assert list(got) == [4, 4]


def test_rejects_a_parent_cycle():
    with pytest.raises(ValueError, match="queues.parent"):
        gpu_shares([q(parent=1), q(parent=0)], 8)


def test_rejects_a_badly_shaped_array():
    a = arrays([q(), q()])
    with pytest.raises(ValueError, match="queues.quota"):
        fair_share(a._replace(quota=np.zeros((2, 2))), np.zeros(3))


queue_strategy = st.fixed_dictionaries(
    {
        "priority": st.sampled_from([50, 100, 100, 200]),
        "quota": st.lists(st.sampled_from([-1.0, 0.0, 1.0, 2.0, 3.5, 8.0]), min_size=3, max_size=3),
        "limit": st.lists(st.sampled_from([-1.0, -1.0, 2.0, 5.0, 12.0]), min_size=3, max_size=3),
        "weight": st.lists(st.sampled_from([0.0, 1.0, 1.0, 2.0, 3.0]), min_size=3, max_size=3),
        "request": st.lists(st.sampled_from([0.0, 0.5, 1.0, 3.0, 7.0, 20.0]), min_size=3, max_size=3),
        "parent_pick": st.integers(min_value=-3, max_value=20),
    }
)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(queue_strategy, min_size=1, max_size=12),
    st.lists(st.sampled_from([0.0, 3.0, 8.0, 17.0, 64.0]), min_size=3, max_size=3),
    st.lists(
        st.lists(st.sampled_from([0.0, 0.1, 0.5, 1.0]), min_size=3, max_size=3), min_size=12, max_size=12
    ),
    st.sampled_from([0.0, 0.5, 1.0, 2.0]),
)
def test_kernel_matches_the_naive_division(raw, total, usage, k):
    queues = []
    for i, r in enumerate(raw):
        # parents only point backwards, so the tree is acyclic; negative picks are top level
        parent = r["parent_pick"] % i if i and r["parent_pick"] >= 0 else None
        queues.append({**r, "parent": parent, "usage": usage[i]})
    # a parent's request is the sum of its subtree's, as the allocator computes it
    for i in range(len(queues) - 1, -1, -1):
        p = queues[i]["parent"]
        if p is not None:
            queues[p]["request"] = [
                a + b for a, b in zip(queues[p]["request"], queues[i]["request"], strict=True)
            ]
    got = fair_share(arrays(queues), np.array(total), k=k)
    want = naive.fair_share(queues, total, k=k)
    np.testing.assert_allclose(got, np.array(want).reshape(-1, 3), atol=1e-9)
