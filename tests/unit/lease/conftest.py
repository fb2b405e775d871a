from __future__ import annotations

import pytest
from muster.bus import MemoryBus
from muster.subjects import Subjects

from services.allocator.config import AllocatorConfig
from services.allocator.engine import Allocator
from services.allocator.handlers import AllocatorHandlers


@pytest.fixture
def allocator():
    """An allocator of pool "default" on a bus in memory, neither leader nor standby yet."""
    bus = MemoryBus(Subjects("t"))
    handlers = AllocatorHandlers(
        bus, bus.subjects, Allocator(AllocatorConfig(), frozenset({"default"})), clock=lambda: 100.0
    )
    return bus, handlers
