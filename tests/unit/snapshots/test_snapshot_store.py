"""Snapshots as stored: sealed with two digests, chosen by sequence and configuration, pruned by age."""

from __future__ import annotations

import asyncio

import pytest
from muster import snapshots as sn


def seal(seq: int, image: bytes = b"state", *, config: str = "c1", format: int = 1):
    return sn.sealed("allocator-default", seq, image, digest="d", format=format, config_digest=config)


def test_a_sealed_snapshot_opens_to_its_image():
    meta, data = seal(10, b"the state at 10")
    assert sn.opened(meta, data) == b"the state at 10"


def test_damaged_bytes_are_refused_before_they_are_decoded():
    meta, data = seal(10)
    with pytest.raises(sn.SnapshotError, match="sha256"):
        sn.opened(meta, data[:-1] + bytes([data[-1] ^ 1]))


def test_the_newest_snapshot_within_the_bounds_and_of_the_configuration_is_chosen_first():
    metas = [seal(s, config=c)[0] for s, c in [(10, "c1"), (20, "c1"), (30, "c2"), (40, "c1")]]
    chosen = sn.choose(metas, format=1, at_most=35, at_least=15, config_digest="c1")
    assert [m.seq for m in chosen] == [20]


def test_a_snapshot_of_another_format_is_never_chosen():
    assert sn.choose([seal(10, format=0)[0]], format=1) == []


def test_pruning_keeps_the_newest_and_one_snapshot_per_band_of_older_history():
    metas = [seal(s)[0] for s in range(100, 1100, 100)]  # 100 .. 1000
    dropped = {m.seq for m in sn.to_prune(metas, keep_recent=3, band=300)}
    kept = {m.seq for m in metas} - dropped
    assert {800, 900, 1000} <= kept
    assert kept - {800, 900, 1000} == {700, 500, 200}  # the newest of bands 600-899, 300-599, 0-299


def test_a_directory_store_lists_gets_and_deletes_what_it_was_given(tmp_path):
    store = sn.DirectorySnapshots(tmp_path)
    a, b = seal(10), seal(20)

    async def go():
        for meta, data in (a, b):
            await store.put(meta, data)
        listed = sorted(m.seq for m in await store.list("allocator-default"))
        got = await store.get(b[0])
        await store.delete(a[0])
        return listed, got, [m.seq for m in await store.list("allocator-default")]

    listed, got, after = asyncio.run(go())
    assert (listed, got, after) == ([10, 20], b[1], [20])


def restore_into(restored: list):
    def restore(meta, image):
        if image == b"refused":
            raise ValueError("not for this fold")
        restored.append((meta.seq, image))

    return restore


def test_restoring_skips_a_damaged_snapshot_for_an_older_one(tmp_path):
    store = sn.DirectorySnapshots(tmp_path)
    good, bad = seal(10, b"good"), seal(20, b"bad")
    restored: list = []

    async def go():
        await store.put(*good)
        await store.put(bad[0], b"torn")
        return await sn.restore_newest(store, "allocator-default", restore_into(restored), format=1)

    assert asyncio.run(go()).seq == 10
    assert restored == [(10, b"good")]


def test_restoring_skips_a_snapshot_the_fold_refuses_for_an_older_one(tmp_path):
    store = sn.DirectorySnapshots(tmp_path)
    restored: list = []

    async def go():
        await store.put(*seal(10, b"good"))
        await store.put(*seal(20, b"refused"))
        return await sn.restore_newest(store, "allocator-default", restore_into(restored), format=1)

    assert asyncio.run(go()).seq == 10
    assert restored == [(10, b"good")]


def test_with_no_usable_snapshot_nothing_is_restored(tmp_path):
    store = sn.DirectorySnapshots(tmp_path)

    async def go():
        await store.put(*seal(10, b"refused"))
        return await sn.restore_newest(store, "allocator-default", restore_into([]), format=1)

    assert asyncio.run(go()) is None
