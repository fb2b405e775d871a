"""The event bus port: publish batches of events, consume them durably.

Two adapters share one contract (``tests/contract/test_bus_contract.py``):
``NatsBus`` over NATS JetStream, and ``MemoryBus`` in process for
simulation and tests.
"""

from muster.bus.base import Bus, Delivery, Handler, chunk_events
from muster.bus.memory import MemoryBus
from muster.bus.nats import NatsBus

__all__ = ["Bus", "Delivery", "Handler", "MemoryBus", "NatsBus", "chunk_events"]
