"""The history writer: a simulated history lands in a stream of its own, message for message, at the
sequences it was numbered with, and replays from there as it replays from memory."""

from __future__ import annotations

import pytest
from muster import events as ev
from muster.bench import history
from muster.bus import NatsBus
from muster.replay import log_from_nats, replay

pytestmark = [pytest.mark.slow, pytest.mark.nats]

EVENTS = 2_000


@pytest.fixture(scope="module")
def small_history():
    return history.history_of(EVENTS, cache=None)


def test_a_simulated_history_is_numbered_as_a_fresh_stream_numbers_it(small_history):
    assert [m.seq for m in small_history] == list(range(1, len(small_history) + 1))
    cycles = [(m.seq, e) for m in small_history for e in m.events if isinstance(e, ev.CycleCompleted)]
    assert cycles and all(e.watermark < seq for seq, e in cycles)  # what a cycle read came before it
    assert isinstance(small_history[-1].events[-1], ev.CycleCompleted)  # cut after a whole cycle
    assert sum(len(m.events) for m in small_history) <= EVENTS
    first, last = history.clock_span(small_history)
    assert last - first >= 300  # paced like a cluster: minutes of clock, not seconds


async def test_a_written_history_is_in_its_stream_message_for_message(endpoints, small_history):
    info = await history.write_history(endpoints, EVENTS, log=small_history)
    bus = await NatsBus.connect(endpoints.nats_url, info.subjects, service="test")
    try:
        stored = await log_from_nats(bus)
        assert await bus.last_seq() == info.messages == len(small_history)
        assert [(m.seq, m.subject) for m in stored] == [
            (m.seq, history.moved(m.subject, info.subjects)) for m in small_history
        ]
        assert [m.events for m in stored] == [m.events for m in small_history]
        assert info.events == sum(len(m.events) for m in stored)
        assert info.live_seconds == pytest.approx(history.clock_span(small_history)[1])
        report = replay(stored, info.subjects)
        assert report.divergences == 0 and report.cycles == info.cycles > 0
    finally:
        await history.delete_history(bus, info)
        await bus.close()
