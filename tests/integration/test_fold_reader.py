"""The fold reader (``NatsBus.fold``): what services whose state is a fold of the log read it with.

Every message on the folded subjects once, in stream order, history first; a
server restart mid-stream neither skips nor repeats one; undecodable messages
are dead-lettered once.
"""

from __future__ import annotations

import asyncio

import pytest
from muster.bus import NatsBus
from muster.events import DeadLettered, PodBound, decode_envelope
from muster.runtime.embedded import EmbeddedNats
from muster.subjects import Subjects

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
