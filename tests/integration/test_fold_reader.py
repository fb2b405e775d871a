"""The fold reader (``NatsBus.fold``): what services whose state is a fold of the log read it with.

Every message on the folded subjects once, in stream order, history first; a
server restart mid-stream neither skips nor repeats one; messages that are not
admitted (undecodable, a type their subject does not carry, a value out of
bounds) are dead-lettered once and never reach the handler.
"""

from __future__ import annotations

import asyncio

import pytest
from muster.bus import NatsBus
from muster.bus.base import MAX_LETTER_DATA
from muster.events import DeadLettered, LeaderElected, PodBound, decode_envelope, encode_envelope
from muster.health import Metrics
from muster.runtime.embedded import EmbeddedNats
from muster.subjects import Subjects

from tests.poison import deep_envelope, raw_envelope

pytestmark = [pytest.mark.nats]

BAD = b'{"events": [{"type": "PodBound", "job": 7}]}'


def bound(i: int) -> PodBound:
    return PodBound(job=f"job-{i}", pod=0, node="node-a")


class Fold:
    """Records what a fold handler sees, and stops once it has seen ``want`` live messages."""

    def __init__(self, want_live: int):
        self.seen: list[tuple[int, bool]] = []
        self.caught_up_after = -1
        self.stop = asyncio.Event()
        self.want_live = want_live
        self.caught_up = asyncio.Event()

    async def handle(self, deliveries, live: bool) -> None:
        self.seen += [(d.seq, live) for d in deliveries]
        if sum(1 for _, was_live in self.seen if was_live) >= self.want_live:
            self.stop.set()

    async def on_caught_up(self) -> None:
        self.caught_up_after = len(self.seen)
        self.caught_up.set()


async def fold_in_background(bus: NatsBus, fold: Fold, subjects: list[str], name: str = "folder"):
    return asyncio.create_task(
        bus.fold(name, subjects, fold.handle, stop=fold.stop, batch=4, on_caught_up=fold.on_caught_up)
    )


async def test_history_comes_first_then_caught_up_then_live_messages_each_once_in_order(nats_bus):
    s = nats_bus.subjects
    history = [await nats_bus.publish(s.pods("default"), [bound(i)], msg_id=f"h{i}") for i in range(10)]
    fold = Fold(want_live=5)
    task = await fold_in_background(nats_bus, fold, [s.pods("*")])
    await asyncio.wait_for(fold.caught_up.wait(), 10)
    live = [await nats_bus.publish(s.pods("default"), [bound(i)], msg_id=f"l{i}") for i in range(5)]
    await asyncio.wait_for(task, 10)
    assert fold.seen == [(seq, False) for seq in history] + [(seq, True) for seq in live]
    assert fold.caught_up_after == len(history)


async def test_a_fold_catches_up_when_the_stream_ends_on_a_subject_it_does_not_read(nats_bus):
    s = nats_bus.subjects
    mine = await nats_bus.publish(s.pods("default"), [bound(1)], msg_id="mine")
    await nats_bus.publish(s.nodes("default"), [bound(2)], msg_id="other")
    fold = Fold(want_live=1)
    task = await fold_in_background(nats_bus, fold, [s.pods("*")])
    await asyncio.wait_for(fold.caught_up.wait(), 10)
    assert fold.seen == [(mine, False)]
    fold.stop.set()
    await asyncio.wait_for(task, 10)


async def test_a_fold_of_an_empty_stream_is_caught_up_at_once(nats_bus):
    fold = Fold(want_live=1)
    task = await fold_in_background(nats_bus, fold, [nats_bus.subjects.pods("*")])
    await asyncio.wait_for(fold.caught_up.wait(), 10)
    assert fold.caught_up_after == 0
    fold.stop.set()
    await asyncio.wait_for(task, 10)


async def letters(bus: NatsBus) -> list[DeadLettered]:
    return [
        e for d in [d async for d in bus.read([bus.subjects.deadletter])] for e in decode_envelope(d.data)
    ]


async def test_an_undecodable_message_is_dead_lettered_once_across_restarts_of_the_fold(nats_bus):
    s = nats_bus.subjects
    bad = await nats_bus.publish_raw(s.pods("default"), BAD, msg_id="bad")
    await nats_bus.publish(s.pods("default"), [bound(1)], msg_id="good")
    for _ in range(2):  # the second fold finds the letter in the history and does not send another
        fold = Fold(want_live=1)
        task = await fold_in_background(nats_bus, fold, [s.pods("*")])
        await asyncio.wait_for(fold.caught_up.wait(), 10)
        fold.stop.set()
        await asyncio.wait_for(task, 10)
        assert [seq for seq, _ in fold.seen] == [bad + 1]
    (letter,) = await letters(nats_bus)
    assert (letter.service, letter.stream_seq, letter.data) == ("folder", bad, BAD)
    assert "$.events[0].job" in letter.error


async def test_an_undecodable_message_in_the_history_nobody_lettered_is_lettered_on_catching_up(nats_bus):
    s = nats_bus.subjects
    bad = await nats_bus.publish_raw(s.pods("default"), BAD, msg_id="bad")
    await nats_bus.publish_raw(s.pods("default"), BAD, msg_id="bad-again")
    # Lettered by someone else: this fold still letters it under its own name.
    await nats_bus.dead_letter("another", s.pods("default"), bad, "x", BAD)
    fold = Fold(want_live=1)
    task = await fold_in_background(nats_bus, fold, [s.pods("*")])
    await asyncio.wait_for(fold.caught_up.wait(), 10)
    fold.stop.set()
    await asyncio.wait_for(task, 10)
    mine = sorted(e.stream_seq for e in await letters(nats_bus) if e.service == "folder")
    assert mine == [bad, bad + 1]


POISON = {
    "a type its subject does not carry": (
        encode_envelope([LeaderElected(pool="default", epoch=2**62, holder="agent")]),
        "$.events[0]: a LeaderElected may not travel on {subject}",
    ),
    "JSON nested 5000 deep": (deep_envelope(5000), "nested deeper than the decoder can follow"),
    "a value out of bounds": (
        raw_envelope({"type": "PodBound", "job": "j", "pod": 2**40, "node": "n"}),
        "$.events[0].pod: 1099511627776 is above the limit of",
    ),
}


@pytest.mark.parametrize("poison", POISON, ids=str)
async def test_a_poison_message_is_dead_lettered_once_with_its_reason_and_every_other_is_applied(
    nats_bus, poison
):
    s = nats_bus.subjects
    data, reason = POISON[poison]
    before = await nats_bus.publish(s.pods("default"), [bound(1)], msg_id="before")
    bad = await nats_bus.publish_raw(s.pods("default"), data, msg_id="bad")
    after = await nats_bus.publish(s.pods("default"), [bound(2)], msg_id="after")
    for _ in range(2):  # a restarted fold rebuilds past the poison, and does not letter it again
        fold = Fold(want_live=1)
        task = await fold_in_background(nats_bus, fold, [s.pods("*")])
        await asyncio.wait_for(fold.caught_up.wait(), 10)
        fold.stop.set()
        await asyncio.wait_for(task, 10)
        assert [seq for seq, _ in fold.seen] == [before, after]
    (letter,) = await letters(nats_bus)
    assert (letter.service, letter.stream_seq, letter.data) == ("folder", bad, data)
    assert reason.format(subject=s.pods("default")) in letter.error


async def test_a_live_poison_message_is_dead_lettered_and_the_fold_goes_on(nats_bus):
    s = nats_bus.subjects
    fold = Fold(want_live=1)
    task = await fold_in_background(nats_bus, fold, [s.pods("*")])
    await asyncio.wait_for(fold.caught_up.wait(), 10)
    bad = await nats_bus.publish_raw(s.pods("default"), deep_envelope(5000), msg_id="bad")
    good = await nats_bus.publish(s.pods("default"), [bound(1)], msg_id="good")
    await asyncio.wait_for(task, 10)
    assert fold.seen == [(good, True)]
    assert [letter.stream_seq for letter in await letters(nats_bus)] == [bad]


async def test_a_plain_publish_into_the_folds_inbox_does_not_stop_the_fold(nats_bus, caplog):
    s = nats_bus.subjects
    history = await nats_bus.publish(s.pods("default"), [bound(0)], msg_id="history")
    nats_bus.metrics = Metrics("folder")  # as in a service, which reports its lag from each message
    fold = Fold(want_live=1)
    task = await fold_in_background(nats_bus, fold, [s.pods("*")])
    await asyncio.wait_for(fold.caught_up.wait(), 10)
    (consumer,) = await nats_bus.js.consumers_info(s.stream)
    # No reply subject, so no stream position: nothing JetStream sent.
    await nats_bus.nc.publish(consumer.config.deliver_subject, encode_envelope([bound(666)]))

    def ignored() -> bool:
        return task.done() or any("did not come from the stream" in r.message for r in caplog.records)

    while not ignored():  # alone in its batch, before anything else arrives
        await asyncio.sleep(0.01)
    good = await nats_bus.publish(s.pods("default"), [bound(1)], msg_id="good")
    await asyncio.wait_for(task, 10)
    assert fold.seen == [(history, False), (good, True)]


async def test_a_letter_keeps_the_start_of_a_message_too_big_to_travel_inside_it(nats_bus):
    s = nats_bus.subjects
    huge = raw_envelope({"type": "PodBound", "job": "x" * 700_000, "pod": -1, "node": "n"})
    bad = await nats_bus.publish_raw(s.pods("default"), huge, msg_id="huge")
    good = await nats_bus.publish(s.pods("default"), [bound(1)], msg_id="good")
    fold = Fold(want_live=1)
    task = await fold_in_background(nats_bus, fold, [s.pods("*")])
    await asyncio.wait_for(fold.caught_up.wait(), 10)
    fold.stop.set()
    await asyncio.wait_for(task, 10)
    assert [seq for seq, _ in fold.seen] == [good]
    (letter,) = await letters(nats_bus)
    assert letter.stream_seq == bad and letter.data == huge[:MAX_LETTER_DATA]
    assert f"keeps the first {MAX_LETTER_DATA} of its {len(huge)} bytes" in letter.error


@pytest.mark.slow
async def test_a_server_restart_mid_stream_neither_skips_nor_repeats_a_message(tmp_path):
    server = EmbeddedNats(tmp_path / "nats").start()
    subjects = Subjects("restart")
    bus = await NatsBus.connect(server.url, subjects, service="folder")
    publisher = await NatsBus.connect(server.url, subjects, service="publisher")
    try:
        total = 600
        fold = Fold(want_live=total)
        task = await fold_in_background(bus, fold, [subjects.pods("*")])
        await asyncio.wait_for(fold.caught_up.wait(), 10)
        for i in range(total):
            await publisher.publish(subjects.pods("default"), [bound(i)], msg_id=f"m{i}")
            if i in (150, 400):
                await asyncio.to_thread(server.stop)
                await asyncio.sleep(0.3)
                await asyncio.to_thread(server.start)
        await asyncio.wait_for(task, 60)
        assert [seq for seq, _ in fold.seen] == list(range(1, total + 1))
    finally:
        await publisher.close()
        await bus.close()
        server.stop()
