"""The client refuses, naming the field, what every reader would dead-letter: nothing is sent to wait on."""

from __future__ import annotations

import pytest
from muster.bus.admission import Refused, admit
from muster.bus.memory import MemoryBus
from muster.events import NodeSpec, QueueSpec
from muster.runtime.settings import Endpoints
from muster.sdk import Client


def client() -> tuple[Client, MemoryBus]:
    bus = MemoryBus()
    return Client(bus, Endpoints(nats_url="", pg_dsn="", prefix=bus.subjects.prefix)), bus  # type: ignore[arg-type]


async def test_a_queue_with_a_name_readers_refuse_is_refused_before_it_is_sent():
    sdk, bus = client()
    with pytest.raises(Refused) as refused:
        await sdk.apply_queues([QueueSpec(name="Team A")], wait=0.1)
    assert refused.value.args[0].startswith("$.events[0].queue.name")
    assert bus.messages == []


async def test_a_node_with_a_name_readers_refuse_is_refused_before_it_is_sent():
    sdk, bus = client()
    with pytest.raises(Refused) as refused:
        await sdk.register_nodes([NodeSpec(name="gpu/1")])
    assert "name" in refused.value.args[0]
    assert bus.messages == []


async def test_a_node_readers_accept_is_sent():
    sdk, bus = client()
    await sdk.register_nodes([NodeSpec(name="gpu-1")])
    assert [m.subject for m in bus.messages] == [bus.subjects.nodes("default")]


def _nested(depth: int) -> dict:
    doc: dict = {}
    for _ in range(depth):
        doc = {"a": doc}
    return doc


async def test_a_submission_nested_past_the_readers_bound_is_refused_before_it_is_sent():
    sdk, bus = client()
    manifest = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": _nested(200)}
    with pytest.raises(Refused) as refused:
        await sdk.submit([manifest], uid="deep")
    assert refused.value.args[0].startswith("$.events[0].manifests: nested deeper")
    assert bus.messages == []


async def test_a_submission_holding_a_nul_character_is_refused_before_it_is_sent():
    sdk, bus = client()
    manifest = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "labels": {"a": "x\x00y"}}}
    with pytest.raises(Refused, match="NUL"):
        await sdk.submit([manifest], uid="nul")
    assert bus.messages == []


async def test_a_submission_readers_accept_is_sent_as_they_will_read_it():
    sdk, bus = client()
    manifest = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": _nested(5)}
    await sdk.submit([manifest], uid="fine", submitted_at=1.0)
    [message] = bus.messages
    assert message.subject == bus.subjects.workloads
    [event] = admit(bus.subjects, message.subject, message.data)
    assert event.manifests == [manifest]
