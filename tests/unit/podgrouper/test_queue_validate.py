"""Consistency of a set of queues: every error names the queue and the field."""

from __future__ import annotations

from muster.events import QueueResource, QueueSpec
from muster.queues.validate import QueueError, validate_queues


def q(name: str, parent: str | None = None, **gpu: float) -> QueueSpec:
    return QueueSpec(name=name, parent=parent, resources={"gpu": QueueResource(**gpu)} if gpu else {})


def test_a_consistent_tree_has_no_errors():
    assert validate_queues([q("dept", quota=-1), q("a", "dept", quota=2, limit=4)]) == []


def test_an_unknown_parent_is_reported_on_the_child():
    assert validate_queues([q("a", "ghost")]) == [QueueError("a", "parent", "unknown parent queue 'ghost'")]


def test_a_parent_cycle_is_reported_for_each_queue_on_it():
    errors = validate_queues([q("a", "b"), q("b", "a")])
    assert [(e.queue, e.field) for e in errors] == [("a", "parent"), ("b", "parent")]


def test_a_negative_quota_other_than_minus_one_is_rejected():
    assert [(e.queue, e.field) for e in validate_queues([q("a", quota=-2)])] == [("a", "resources.gpu.quota")]


def test_minus_one_means_unlimited_and_is_allowed():
    assert validate_queues([q("a", quota=-1, limit=-1)]) == []


def test_a_limit_below_the_quota_is_rejected():
    [error] = validate_queues([q("a", quota=4, limit=2)])
    assert (error.field, error.message) == ("resources.gpu.limit", "limit 2 is below quota 4")


def test_a_negative_weight_is_rejected():
    assert validate_queues([q("a", over_quota_weight=-1)])[0].field == "resources.gpu.over_quota_weight"


def test_a_duplicate_name_is_rejected():
    assert validate_queues([q("a"), q("a")]) == [QueueError("a", "name", "defined more than once")]
