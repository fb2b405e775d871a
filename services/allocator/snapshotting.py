"""When a pool's allocator takes snapshots of its fold, and how it starts from the newest.

An allocator that starts restores the newest snapshot of its pool taken
under its own configuration whose tail the stream still holds, and folds
on from the message after it: a restart costs the snapshot and the tail,
not the whole history. Snapshots are taken between two messages, when the
fold has read ``every`` messages past the newest one: while catching up
(the history has to be read anyway), and, once live, by the leader only,
and not more often than ``min_interval`` seconds, as each costs it a pause.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

import msgspec
from muster import snapshots as sn

from services.allocator import snapshot as codec
from services.allocator.config import AllocatorConfig
from services.allocator.fold import AllocatorFold, fold_name

log = logging.getLogger(__name__)


class Snapshotter:
    def __init__(
        self,
        store,
        fold: AllocatorFold,
        config: AllocatorConfig,
        *,
        every: int,
        min_interval: float = 10.0,
        keep_recent: int = 4,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.store = store
        self.fold = fold
        self.name = fold_name(fold.pool)
        self.config = config
        self.config_digest = config.digest()
        self.every = every
        self.min_interval = min_interval
        self.keep_recent = keep_recent
        self.clock = clock
        self.newest = 0
        """The sequence of the newest snapshot stored (or restored)."""
        self._last_taken = float("-inf")

    async def restore(self, first_seq: int) -> int:
        """Restore the newest usable snapshot into the fold; the sequence to fold on from."""
        metas = await self.store.list(self.name)
        self.newest = max((m.seq for m in metas), default=0)
        started = time.perf_counter()
        meta = await sn.restore_newest(
            self.store,
            self.name,
            lambda meta, image: codec.restore_image(self.fold, image, meta.digest),
            format=codec.FORMAT,
            at_least=first_seq - 1,
            config_digest=self.config_digest,
        )
        if meta is None:
            return 1
        log.info(
            "pool %s: restored its state at sequence %d (%d jobs) in %.2fs",
            self.fold.pool, meta.seq, len(self.fold.engine.state.jobs), time.perf_counter() - started,
        )  # fmt: skip
        return meta.seq + 1

    def due(self, *, live: bool, leader: bool) -> bool:
        """Whether to snapshot now: far enough past the newest, and (once live) the leader's turn."""
        if self.every <= 0 or self.fold.watermark - self.newest < self.every:
            return False
        if not live:
            return True
        return leader and self.clock() - self._last_taken >= self.min_interval

    async def take(self) -> sn.SnapshotMeta:
        """Store a snapshot of the fold as it is now, and prune the ones no longer worth keeping."""
        image = codec.image_of(self.fold)
        meta, data = sn.sealed(
            self.name,
            self.fold.watermark,
            image.data,
            digest=image.digest,
            format=codec.FORMAT,
            config_digest=self.config_digest,
            config=msgspec.to_builtins(self.config),
        )
        await self.store.put(meta, data)
        self.newest = meta.seq
        self._last_taken = self.clock()
        for old in sn.to_prune(
            await self.store.list(self.name), keep_recent=self.keep_recent, band=self.every * 16
        ):
            await self.store.delete(old)
        return meta
