"""Borrowed and lent at one moment: over-quota use is served first from room no quota covers, then from
unused quotas in proportion."""

from __future__ import annotations

import pytest
from muster.report.shares import QueueTree, lent_by_siblings, moment


def two_teams(quota_a: float = 4, quota_b: float = 4) -> QueueTree:
    return QueueTree.of([("a", None, quota_a), ("b", None, quota_b)])


def test_a_queue_over_its_quota_borrows_what_the_idle_queue_lends():
    m = moment(two_teams(), {"b": 8.0}, {}, capacity=8)
    assert m.borrowed == {"a": 0.0, "b": 4.0}
    assert m.lent == {"a": 4.0, "b": 0.0}


def test_borrowing_that_fits_in_room_no_quota_covers_takes_no_ones_quota():
    # 16 GPUs, quotas 4 + 4: b's 8 above its quota fit in the 8 nobody's quota covers.
    m = moment(two_teams(), {"b": 12.0}, {}, capacity=16)
    assert m.borrowed["b"] == 8.0 and m.lent["a"] == 0.0


def test_borrowing_beyond_the_uncovered_room_sits_on_unused_quota():
    # b borrows 10; 8 come from uncovered room, 2 from a's unused 4.
    m = moment(two_teams(), {"b": 14.0}, {}, capacity=16)
    assert m.lent["a"] == pytest.approx(2.0)


def test_lenders_share_the_borrowing_in_proportion_to_what_they_leave_unused():
    # c borrows 3 on 8 GPUs all under quota; a leaves 3 unused, b 1: they lend 3/4 and 1/4 of 3.
    lent = lent_by_siblings(("a", "b", "c"), {"a": 0.0, "b": 2.0, "c": 5.0}, {"a": 3, "b": 3, "c": 2}, room=8)
    assert lent == pytest.approx({"a": 2.25, "b": 0.75, "c": 0.0})


def test_children_share_what_their_parent_holds():
    # research (quota 8) holds 8: vision uses 6 of its 4 quota, nlp 2 of 4: nlp lends 2 to vision.
    tree = QueueTree.of([("research", None, 8), ("vision", "research", 4), ("nlp", "research", 4)])
    m = moment(tree, {"vision": 6.0, "nlp": 2.0}, {}, capacity=16)
    assert m.used["research"] == 8.0
    assert m.borrowed == {"research": 0.0, "vision": 2.0, "nlp": 0.0}
    assert m.lent == {"research": 0.0, "vision": 0.0, "nlp": 2.0}


def test_an_unlimited_quota_is_the_room_its_siblings_share():
    tree = QueueTree.of([("top", None, -1), ("child", "top", -1), ("other", None, 2)])
    m = moment(tree, {}, {}, capacity=10)
    assert m.quota == {"top": 10, "child": 10, "other": 2}


def test_a_queue_is_starved_when_below_its_quota_with_a_pod_waiting():
    m = moment(two_teams(), {"a": 2.0, "b": 4.0}, {"a": 1, "b": 1}, capacity=8)
    assert m.starved == {"a"}  # b waits at its quota: not starved
    assert moment(two_teams(), {"a": 2.0}, {}, capacity=8).starved == set()


def test_a_parent_is_listed_before_its_children_and_a_parent_loop_is_broken():
    tree = QueueTree.of([("c", "p", 1), ("p", None, 2), ("x", "y", 0), ("y", "x", 0)])
    assert tree.order.index("p") < tree.order.index("c")
    assert set(tree.order) == {"c", "p", "x", "y"}
    assert tree.depth("c") == 1 and tree.is_leaf("c") and not tree.is_leaf("p")
