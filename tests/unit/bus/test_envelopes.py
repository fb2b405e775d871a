"""A publisher of many events encodes each once: ``envelopes`` gives the very bytes of ``chunk_events``'
chunks, each encoded as ``publish`` would."""

from __future__ import annotations

from muster import events as ev
from muster.bus import chunk_events, envelopes
from muster.events import decode_envelope, encode_envelope


def groups(count: int) -> list[ev.Event]:
    return [
        ev.PodGroupCreated(name=f"job-{i:06d}", queue="q", pods=[ev.PodSpec(resources=ev.Resources(gpu=1))])
        for i in range(count)
    ]


def test_envelopes_are_the_bytes_publish_sends_for_each_chunk():
    events = groups(50)
    limit = 4096  # several chunks
    assert len(chunk_events(events, limit)) > 1
    assert envelopes(events, limit) == [encode_envelope(chunk) for chunk in chunk_events(events, limit)]


def test_envelopes_keep_every_event_in_order_and_each_under_the_limit():
    events = groups(50)
    sent = envelopes(events, 4096)
    assert [e for data in sent for e in decode_envelope(data)] == events
    assert all(len(data) <= 4096 + len(b'{"events":[]}') for data in sent)


def test_an_event_larger_than_the_limit_goes_alone():
    events = groups(3)
    assert [decode_envelope(data) for data in envelopes(events, 10)] == [[e] for e in events]


def test_no_events_make_no_envelope():
    assert envelopes([]) == []
