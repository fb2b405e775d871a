"""The client refuses, naming the field, what every reader would dead-letter: nothing is sent to wait on."""

from __future__ import annotations

import pytest
from muster.bus.admission import Refused
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
