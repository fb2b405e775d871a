"""Waiting on a live system from a test: poll until something holds, and say what was last seen."""

from __future__ import annotations

import asyncio
import time


def wait_for(predicate, timeout: float = 30.0, poll: float = 0.2, what: str = "condition"):
    """Poll until ``predicate()`` returns something truthy; fail with what was last seen."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = predicate()
        if last:
            return last
        time.sleep(poll)
    raise AssertionError(f"timed out waiting for {what}; last seen: {last!r}")


async def wait_until(predicate, timeout: float = 30.0, poll: float = 0.1, what: str = "condition"):
    """``wait_for`` for an async ``predicate()``, without blocking the event loop between polls."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = await predicate()
        if last:
            return last
        await asyncio.sleep(poll)
    raise AssertionError(f"timed out waiting for {what}; last seen: {last!r}")
