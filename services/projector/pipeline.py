"""Two batches in flight: the next one is prepared while the previous one commits.

Preparing a batch (converting events to rows, planning the writes) is Python's work; committing it
is mostly Postgres's. Done one after the other, each waits for the other and a 2-core machine
projects at the speed of their sum; overlapped, at the speed of the slower. The next batch is
prepared in a worker thread against the stream position the previous one ends at; the commit
checks that position against the checkpoint it locks and prepares again if they differ, so the
projection stays exactly once whatever happens between the two.

Preparing first checks each node's word about a pod against where the projection has it
(``muster.store.facts``): a refused fact is kept in ``events`` and moves no row, and its message is
dead-lettered (with the first refusal's reason) before its batch is committed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from muster.bus import Delivery
from muster.store.facts import ProjectedFacts
from muster.store.sink import Prepared, prepare

Letter = Callable[[Delivery, str], Awaitable[None]]
"""Dead-letters a message with why a fact in it was refused."""


class Pipeline:
    """A ``follow`` handler that keeps one commit running while it prepares the next batch."""

    def __init__(
        self,
        position: int,
        commit: Callable[[Prepared], Awaitable[int]],
        facts: ProjectedFacts | None = None,
        letter: Letter | None = None,
    ):
        self.position = position
        """The stream position the batches prepared so far end at."""
        self._commit = commit
        self._pending: asyncio.Task | None = None
        self.facts = facts if facts is not None else ProjectedFacts()
        """The projection's placements as of ``position`` (``ProjectedFacts.load`` at a restart)."""
        self._letter = letter

    def _prepare(self, deliveries: list[Delivery]) -> tuple[Prepared, list[tuple[Delivery, str]]]:
        refused, letters = self.facts.admit_all(deliveries)
        return prepare(deliveries, self.position, refused), letters

    async def handle(self, deliveries: list[Delivery]) -> None:
        batch, letters = await asyncio.to_thread(self._prepare, deliveries)
        await self.drain()  # a failed commit surfaces here, before anything later is written
        if self._letter is not None:
            # Before the checkpoint passes them: a crash in between letters them again (under the same
            # message id), never loses one.
            for delivery, why in letters:
                await self._letter(delivery, why)
        if batch.count:
            self.position = batch.last
            self._pending = asyncio.create_task(self._commit(batch))

    async def drain(self) -> None:
        """Wait for the commit in flight, if any; raises what it raised."""
        pending, self._pending = self._pending, None
        if pending is not None:
            await pending
