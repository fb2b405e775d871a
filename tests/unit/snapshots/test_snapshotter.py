"""The Snapshotter: when a fold takes snapshots, and where it starts from after a restart."""

from __future__ import annotations

import asyncio

import msgspec
from muster.snapshots import DirectorySnapshots
from muster.snapshotting import Image, Snapshotter, decoded, encode, pack, settings, unpack


class Counter:
    """A fold of the log that counts messages."""

    def __init__(self) -> None:
        self.watermark = 0
        self.count = 0

    def fold(self, seq: int) -> None:
        self.watermark = seq
        self.count += 1


class CounterCodec:
    format = 1
    _decoder = msgspec.msgpack.Decoder(tuple[int, int])

    def image_of(self, fold: Counter) -> Image:
        return pack(self.format, encode((fold.watermark, fold.count)))

    def restore(self, fold: Counter, data: bytes, digest: str | None = None) -> None:
        part, _ = unpack(data, format=self.format, digest=digest, what="counter")
        fold.watermark, fold.count = decoded(self._decoder, part, "counter")

    def watermark(self, fold: Counter) -> int:
        return fold.watermark

    def summary(self, fold: Counter) -> str:
        return f"{fold.count} messages"


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def snapshotter(tmp_path, fold: Counter, clock: Clock | None = None, **kw) -> Snapshotter:
    return Snapshotter(
        DirectorySnapshots(tmp_path), "counter", fold, CounterCodec(), clock=clock or Clock(), **kw
    )


def test_a_fold_without_a_leader_takes_one_every_n_messages_and_live_not_sooner_than_the_interval(tmp_path):
    clock = Clock()
    fold = Counter()
    snapshots = snapshotter(tmp_path, fold, clock, every=10, min_interval=5)
    taken = []
    for seq in range(1, 41):
        fold.fold(seq)
        live = seq > 20
        if snapshots.due(live=live):
            taken.append(asyncio.run(snapshots.take()).seq)
        clock.now += 1
    # Catching up: every 10 messages. Live: 10 messages past the newest and 5 s after the last.
    assert taken == [10, 20, 30, 40]
    fold2, clock2 = Counter(), Clock()
    quick = snapshotter(tmp_path / "quick", fold2, clock2, every=2, min_interval=5)
    live_taken = []
    for seq in range(1, 13):
        fold2.fold(seq)
        if quick.due(live=True):
            live_taken.append(asyncio.run(quick.take()).seq)
        clock2.now += 1
    assert live_taken == [2, 7, 12]


def test_a_fold_with_a_leader_snapshots_live_only_while_it_leads(tmp_path):
    fold = Counter()
    snapshots = snapshotter(tmp_path, fold, every=1, min_interval=0)
    fold.fold(1)
    assert snapshots.due(live=False, leader=False)
    assert not snapshots.due(live=True, leader=False)
    assert snapshots.due(live=True, leader=True)


def test_a_restarted_fold_starts_after_its_newest_snapshot(tmp_path):
    fold = Counter()
    snapshots = snapshotter(tmp_path, fold, every=3)
    for seq in range(1, 8):
        fold.fold(seq)
        if snapshots.due(live=False):
            asyncio.run(snapshots.take())
    restarted = Counter()
    again = snapshotter(tmp_path, restarted, every=3)
    assert asyncio.run(again.restore(first_seq=1)) == 7
    assert (restarted.watermark, restarted.count) == (6, 6) and again.newest == 6
    # A stream that no longer holds the snapshot's tail: the fold starts from the log.
    assert asyncio.run(snapshotter(tmp_path, Counter(), every=3).restore(first_seq=9)) == 1


def stored_at(tmp_path, *seqs: int) -> None:
    """Snapshots of a counting fold at each of ``seqs``, in the store at ``tmp_path``."""
    fold = Counter()
    snapshots = snapshotter(tmp_path, fold, every=1)
    for seq in range(1, max(seqs) + 1):
        fold.fold(seq)
        if seq in seqs:
            asyncio.run(snapshots.take())


def test_a_snapshot_past_the_streams_last_message_is_refused_for_an_older_one(tmp_path, caplog):
    stored_at(tmp_path, 4, 9)
    restarted = Counter()
    again = snapshotter(tmp_path, restarted, every=100)
    assert asyncio.run(again.restore(first_seq=1, last_seq=6)) == 5
    assert (restarted.watermark, restarted.count, again.newest) == (4, 4, 4)
    assert "counter/00000000000000000009 refused: its sequence is past the stream's last, 6" in caplog.text


def test_a_snapshot_at_the_streams_last_message_is_restored(tmp_path):
    stored_at(tmp_path, 4, 9)
    restarted = Counter()
    assert asyncio.run(snapshotter(tmp_path, restarted, every=100).restore(first_seq=1, last_seq=9)) == 10


def test_a_snapshot_whose_state_does_not_match_its_digest_is_refused_for_an_older_one(tmp_path, caplog):
    import json

    stored_at(tmp_path, 4, 9)
    record = tmp_path / "counter" / "00000000000000000009.json"
    meta = json.loads(record.read_text())
    record.write_text(json.dumps({**meta, "digest": "0" * 64}))
    restarted = Counter()
    assert asyncio.run(snapshotter(tmp_path, restarted, every=100).restore(first_seq=1, last_seq=9)) == 5
    assert restarted.watermark == 4
    assert "the snapshot's state does not match its digest" in caplog.text


def test_a_fold_that_can_only_start_from_a_purged_stream_says_what_it_lacks(tmp_path, caplog):
    assert asyncio.run(snapshotter(tmp_path, Counter(), every=3).restore(first_seq=9)) == 1
    assert "counter: no usable snapshot (format 1) covers sequences before 9" in caplog.text


def test_a_fold_of_a_whole_stream_starts_from_it_without_a_word(tmp_path, caplog):
    assert asyncio.run(snapshotter(tmp_path, Counter(), every=3).restore(first_seq=1)) == 1
    assert "no usable snapshot" not in caplog.text


def test_zero_takes_no_snapshots_and_the_defaults_are_ten_thousand_ten_seconds_and_64_kept(tmp_path):
    fold = Counter()
    fold.fold(10**6)
    assert not snapshotter(tmp_path, fold, every=0).due(live=False)
    assert settings({}) == {"every": 10000, "min_interval": 10.0, "keep_recent": 64}
    given = {"MUSTER_SNAPSHOT_EVERY": "5", "MUSTER_SNAPSHOT_MIN_INTERVAL": "0.5", "MUSTER_SNAPSHOT_KEEP": "3"}
    assert settings(given) == {"every": 5, "min_interval": 0.5, "keep_recent": 3}
