"""The event bus port: publish batches of events, consume them durably.

Two adapters share one contract (``tests/contract/test_bus_contract.py``):
``NatsBus`` over NATS JetStream, and ``MemoryBus`` in process for
simulation and tests.
"""

from muster.bus.base import Bus, Delivery, DuplicateMessage, Handler, OnDuplicate, chunk_events, envelopes
from muster.bus.memory import MemoryBus
from muster.bus.nats import NatsBus

__all__ = [
    "Bus",
    "Delivery",
    "DuplicateMessage",
    "Handler",
    "MemoryBus",
    "NatsBus",
    "OnDuplicate",
    "chunk_events",
    "envelopes",
]
