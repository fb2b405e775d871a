"""Waiting on a live system from a test: poll until something holds, and say what was last seen."""

from __future__ import annotations

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
