"""How far the stream may be purged: never past the archive, a required fold's snapshot, or the newest kept."""

from __future__ import annotations

import pytest
from muster.retention import RetentionPolicy, purge_floor

POLICY = RetentionPolicy(keep=100, requires=frozenset({"allocator-default"}))


def floor(**kw):
    args = {"first": 1, "last": 10_000, "archived": 10_000, "snapshots": {"allocator-default": 9_000}}
    return purge_floor(POLICY, **{**args, **kw})


def test_the_stream_keeps_what_the_newest_snapshot_of_a_required_fold_needs():
    assert floor().seq == 9_001


def test_the_stream_keeps_what_the_archive_does_not_hold_yet():
    f = floor(archived=5_000)
    assert (f.seq, f.held_by) == (5_001, "the archive (the projector's checkpoint)")


def test_the_newest_messages_are_always_kept():
    assert floor(snapshots={"allocator-default": 9_990}).seq == 9_901


def test_a_required_fold_without_any_snapshot_holds_the_whole_stream():
    f = floor(snapshots={})
    assert (f.seq, f.held_by) == (1, "allocator-default's newest snapshot")


def test_every_fold_that_takes_snapshots_counts_even_if_not_required():
    f = floor(snapshots={"allocator-default": 9_000, "binder": 7_000})
    assert (f.seq, f.held_by) == (7_001, "binder's newest snapshot")


def test_the_floor_is_never_below_what_was_already_purged():
    assert floor(first=9_500).seq == 9_500


def test_retention_is_off_unless_a_number_of_messages_to_keep_is_set():
    assert RetentionPolicy.from_env({}) is None
    policy = RetentionPolicy.from_env({"MUSTER_STREAM_KEEP": "500", "MUSTER_RETENTION_REQUIRES": "a, b"})
    assert policy == RetentionPolicy(500, frozenset({"a", "b"}))


@pytest.mark.parametrize("value", ["lots", "0"])
def test_a_bad_number_of_messages_to_keep_is_refused_by_name(value):
    with pytest.raises(ValueError, match="MUSTER_STREAM_KEEP"):
        RetentionPolicy.from_env({"MUSTER_STREAM_KEEP": value})
