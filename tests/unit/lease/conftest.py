from __future__ import annotations

import pytest
from muster.bus import MemoryBus
from muster.scheduler.config import AllocatorConfig
from muster.scheduler.engine import Allocator
from muster.subjects import Subjects

from services.allocator.handlers import AllocatorHandlers


@pytest.fixture
def allocator():
    """An allocator of pool "default" on a bus in memory, neither leader nor standby yet."""
    bus = MemoryBus(Subjects("t"))
    handlers = AllocatorHandlers(
        bus, bus.subjects, Allocator(AllocatorConfig(), frozenset({"default"})), clock=lambda: 100.0
    )
    return bus, handlers
