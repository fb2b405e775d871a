"""One behaviour suite for the bus port, run against MemoryBus and real NATS JetStream."""

from __future__ import annotations

import asyncio

import pytest
from muster.bus import DuplicateMessage, MemoryBus, NatsBus, OnDuplicate
from muster.events import (
    DeadLettered,
    NodeRemoved,
    PodBound,
    QueueSpec,
    QueueUpserted,
    WorkloadSubmitted,
    decode_envelope,
    encode_envelope,
)
from muster.subjects import Subjects
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider

from tests.poison import deep_envelope, raw_envelope


@pytest.fixture(params=["memory", pytest.param("nats", marks=pytest.mark.nats)])
async def bus(request, prefix):
    if request.param == "memory":
        yield MemoryBus(Subjects(prefix))
        return
    endpoints = request.getfixturevalue("endpoints")
    nats = await NatsBus.connect(endpoints.nats_url, endpoints.subjects, service="test")
    try:
        yield nats
    finally:
        await nats.js.delete_stream(endpoints.subjects.stream)
        await nats.close()


def bound(i: int) -> PodBound:
    return PodBound(job=f"job-{i}", pod=0, node="node-a")


class Collector:
    def __init__(self, stop: asyncio.Event, want: int):
        self.deliveries = []
        self.stop = stop
        self.want = want

    async def __call__(self, batch):
        self.deliveries.extend(batch)
        if sum(len(d.events) for d in self.deliveries) >= self.want:
            self.stop.set()

    @property
    def events(self):
        return [e for d in self.deliveries for e in d.events]


async def consume_until(bus, name, subjects, want, timeout=10.0):
    stop = asyncio.Event()
    collector = Collector(stop, want)
    await asyncio.wait_for(bus.consume(name, subjects, collector, stop=stop), timeout)
    return collector


async def test_publish_returns_increasing_stream_sequences(bus):
    s = bus.subjects
    first = await bus.publish(s.pods("default"), [bound(1)], msg_id="a")
    second = await bus.publish(s.pods("default"), [bound(2)], msg_id="b")
    assert second == first + 1
    assert await bus.last_seq() == second


async def test_republishing_a_message_id_stores_nothing_new(bus):
    s = bus.subjects
    seq = await bus.publish(s.pods("default"), [bound(1)], msg_id="same")
    again = await bus.publish(s.pods("default"), [bound(1)], msg_id="same")
    assert again == seq
    assert await bus.last_seq() == seq


async def test_a_publish_that_must_be_new_is_refused_when_its_id_is_taken_and_stores_nothing(bus):
    s = bus.subjects
    first = await bus.publish(s.pods("default"), [bound(1)], msg_id="taken")
    # Even the very same message: a first attempt answered "duplicate" was not this call's.
    for events in ([bound(2)], [bound(1)]):
        with pytest.raises(DuplicateMessage, match=f"names message {first} of the stream"):
            await bus.publish(s.pods("default"), events, msg_id="taken", on_duplicate=OnDuplicate.NEW)
    assert await bus.last_seq() == first


async def test_a_repeatable_publish_takes_its_own_stored_message_as_done(bus):
    s = bus.subjects
    first = await bus.publish(s.pods("default"), [bound(1)], msg_id="again", on_duplicate=OnDuplicate.SAME)
    again = await bus.publish(s.pods("default"), [bound(1)], msg_id="again", on_duplicate=OnDuplicate.SAME)
    assert again == first
    assert await bus.last_seq() == first


@pytest.mark.parametrize("where", ["other bytes", "other subject"])
async def test_a_repeatable_publish_refuses_another_message_under_its_id(bus, where):
    s = bus.subjects
    subject, events = (s.pods("default"), [bound(2)]) if where == "other bytes" else (s.pods("x"), [bound(1)])
    await bus.publish(subject, events, msg_id="squatted")
    with pytest.raises(DuplicateMessage):
        await bus.publish(s.pods("default"), [bound(1)], msg_id="squatted", on_duplicate=OnDuplicate.SAME)
    assert await bus.last_seq() == 1


async def test_consumer_receives_batches_in_stream_order_on_its_subjects_only(bus):
    s = bus.subjects
    await bus.publish(s.pods("default"), [bound(1), bound(2)], msg_id="1")
    await bus.publish(s.nodes("default"), [NodeRemoved(name="n")], msg_id="2")
    await bus.publish(s.pods("gpu-a"), [bound(3)], msg_id="3")
    got = await consume_until(bus, "c1", [s.pods("*")], want=3)
    assert [e.job for e in got.events] == ["job-1", "job-2", "job-3"]
    assert [d.seq for d in got.deliveries] == [1, 3]


async def test_consumer_takes_several_subject_filters_in_one_ordered_stream(bus):
    s = bus.subjects
    await bus.publish(s.pods("default"), [bound(1)], msg_id="1")
    await bus.publish(s.workloads, [WorkloadSubmitted(uid="skip", manifests=[])], msg_id="2")
    await bus.publish(s.nodes("default"), [NodeRemoved(name="n")], msg_id="3")
    got = await consume_until(bus, "multi", [s.pods("*"), s.nodes("*")], want=2)
    assert [type(e).__name__ for e in got.events] == ["PodBound", "NodeRemoved"]


async def test_durable_consumer_resumes_after_its_last_acknowledged_message(bus):
    s = bus.subjects
    await bus.publish(s.pods("default"), [bound(1)], msg_id="1")
    await consume_until(bus, "durable", [s.pods("*")], want=1)
    await bus.publish(s.pods("default"), [bound(2)], msg_id="2")
    got = await consume_until(bus, "durable", [s.pods("*")], want=1)
    assert [e.job for e in got.events] == ["job-2"]


async def test_undecodable_message_goes_to_dead_letters_and_consumption_goes_on(bus):
    s = bus.subjects
    await bus.publish_raw(s.pods("default"), b'{"events": [{"type": "PodBound", "job": 7}]}', msg_id="bad")
    await bus.publish(s.pods("default"), [bound(2)], msg_id="good")
    got = await consume_until(bus, "c", [s.pods("*")], want=1)
    assert [e.job for e in got.events] == ["job-2"]
    dead = await consume_until(bus, "dlq", [s.deadletter], want=1)
    letter = dead.events[0]
    assert isinstance(letter, DeadLettered)
    assert "$.events[0].job" in letter.error
    assert letter.data == b'{"events": [{"type": "PodBound", "job": 7}]}'
    assert letter.stream_seq == 1


POISON = {
    "a type its subject does not carry": (
        lambda s: encode_envelope([QueueUpserted(queue=QueueSpec(name="forged"))]),
        "$.events[0]: a QueueUpserted may not travel on {subject}",
    ),
    "JSON nested 5000 deep": (lambda s: deep_envelope(5000), "nested deeper than the decoder can follow"),
    "a value out of bounds": (
        lambda s: raw_envelope({"type": "PodBound", "job": "j", "pod": -1, "node": "n"}),
        "$.events[0].pod: -1 is below the limit of 0",
    ),
}


@pytest.mark.parametrize("poison", POISON, ids=str)
async def test_a_poison_message_is_dead_lettered_with_its_reason_and_consumption_goes_on(bus, poison):
    s = bus.subjects
    make, reason = POISON[poison]
    await bus.publish(s.pods("default"), [bound(1)], msg_id="before")
    await bus.publish_raw(s.pods("default"), make(s), msg_id="bad")
    await bus.publish(s.pods("default"), [bound(2)], msg_id="after")
    got = await consume_until(bus, "c", [s.pods("*")], want=2)
    assert [e.job for e in got.events] == ["job-1", "job-2"]
    dead = await consume_until(bus, "dlq", [s.deadletter], want=1)
    (letter,) = dead.events
    assert (letter.service, letter.stream_seq) == ("c", 2)
    assert reason.format(subject=s.pods("default")) in letter.error


async def test_a_message_whose_handler_keeps_failing_is_dead_lettered_and_the_rest_handled(bus):
    s = bus.subjects
    await bus.publish(s.pods("default"), [bound(1)], msg_id="1")
    await bus.publish(s.pods("default"), [bound(666)], msg_id="poison")
    await bus.publish(s.pods("default"), [bound(3)], msg_id="3")
    handled: list[str] = []
    stop = asyncio.Event()

    async def handler(batch):
        if any(e.job == "job-666" for d in batch for e in d.events):
            raise RuntimeError("cannot handle job-666")
        handled.extend(e.job for d in batch for e in d.events)

    consumer = asyncio.create_task(bus.consume("h", [s.pods("*")], handler, stop=stop, max_attempts=2))
    try:
        dead = await consume_until(bus, "dlq", [s.deadletter], want=1, timeout=20)
    finally:
        stop.set()
        await consumer
    assert handled == ["job-1", "job-3"]
    assert "cannot handle job-666" in dead.events[0].error
    assert decode_envelope(dead.events[0].data)[0].job == "job-666"


async def test_trace_context_travels_with_the_message(bus):
    provider = TracerProvider()
    tracer = provider.get_tracer("test")
    s = bus.subjects
    with tracer.start_as_current_span("submit") as span:
        await bus.publish(s.pods("default"), [bound(1)], msg_id="traced")
        trace_id = span.get_span_context().trace_id
    got = await consume_until(bus, "t", [s.pods("*")], want=1)
    carried = trace.get_current_span(got.deliveries[0].context).get_span_context()
    assert carried.trace_id == trace_id
