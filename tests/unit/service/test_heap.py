"""A service's heap: its survivors frozen out of the collector's walks, its cycles still freed."""

import asyncio
import gc
import weakref

import pytest
from muster.heap import keep_survivors_frozen


class Node:
    """An object that can sit in a reference cycle and be watched through a weak reference."""

    def __init__(self) -> None:
        self.me = self


@pytest.fixture(autouse=True)
def unfrozen():
    yield
    gc.unfreeze()


async def _run_until(task_done, *, clock):
    task = asyncio.ensure_future(keep_survivors_frozen(every=0.001, full_every=10.0, clock=clock))
    try:
        for _ in range(200):
            await asyncio.sleep(0.002)
            if task_done():
                return
    finally:
        task.cancel()


async def test_what_survives_is_frozen_out_of_the_collectors_generations():
    gc.unfreeze()
    state = [Node() for _ in range(100)]
    await _run_until(lambda: gc.get_freeze_count() >= len(state), clock=lambda: 0.0)
    assert gc.get_freeze_count() >= len(state)


async def test_a_frozen_reference_cycle_is_freed_by_the_next_full_collection():
    now = [0.0]
    cycle = Node()
    watch = weakref.ref(cycle)
    task = asyncio.ensure_future(keep_survivors_frozen(every=0.001, full_every=10.0, clock=lambda: now[0]))
    try:
        await asyncio.sleep(0.01)  # frozen with the survivors
        del cycle
        gc.collect()
        assert watch() is not None, "a frozen cycle outlives an ordinary collection"
        now[0] = 10.0
        for _ in range(100):
            await asyncio.sleep(0.002)
            if watch() is None:
                break
        assert watch() is None
    finally:
        task.cancel()
