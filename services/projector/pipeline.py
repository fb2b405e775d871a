"""Two batches in flight: the next one is prepared while the previous one commits.

Preparing a batch (converting events to rows, planning the writes) is Python's work; committing it
is mostly Postgres's. Done one after the other, each waits for the other and a 2-core machine
projects at the speed of their sum; overlapped, at the speed of the slower. The next batch is
prepared in a worker thread against the stream position the previous one ends at; the commit
checks that position against the checkpoint it locks and prepares again if they differ, so the
projection stays exactly once whatever happens between the two.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from muster.bus import Delivery
from muster.store.sink import Prepared, prepare


class Pipeline:
    """A ``follow`` handler that keeps one commit running while it prepares the next batch."""

    def __init__(self, position: int, commit: Callable[[Prepared], Awaitable[int]]):
        self.position = position
        """The stream position the batches prepared so far end at."""
        self._commit = commit
        self._pending: asyncio.Task | None = None

    async def handle(self, deliveries: list[Delivery]) -> None:
        batch = await asyncio.to_thread(prepare, deliveries, self.position)
        await self.drain()  # a failed commit surfaces here, before anything later is written
        if batch.count:
            self.position = batch.last
            self._pending = asyncio.create_task(self._commit(batch))

    async def drain(self) -> None:
        """Wait for the commit in flight, if any; raises what it raised."""
        pending, self._pending = self._pending, None
        if pending is not None:
            await pending
