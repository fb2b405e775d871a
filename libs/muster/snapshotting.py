"""When a fold takes snapshots of its state, and how it starts from the newest.

A service whose state is a fold of the log restores, at start, the newest
snapshot of its fold (``muster.snapshots``) whose tail the stream still
holds, and folds on from the message after it: a restart costs the
snapshot and the tail, not the whole history. Snapshots are taken between
two messages, when the fold has read ``every`` messages past the newest
one: while catching up (the history has to be read anyway), and, once
live, not more often than ``min_interval`` seconds, as each costs a pause.
A fold with a leader (the allocator) snapshots live only while it leads.

What a snapshot holds is the fold's own business, told through a ``Codec``:
its image as bytes, the digest of the part of it the log alone decides
(equal for any two folds of one log at one sequence, in any process), and
the way back. ``pack`` and ``unpack`` give every codec the same envelope:
the format, the digested part, and, undigested beside it, what only the
process knows.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Protocol, TypeVar

import msgspec

from muster import snapshots as sn

log = logging.getLogger(__name__)

F = TypeVar("F", contravariant=True)


class Image(msgspec.Struct, frozen=True):
    data: bytes
    digest: str
    """sha256 of the log-decided part: equal for every fold of one log at one sequence."""


class ImageError(ValueError):
    """Bytes that are not an image this codec reads (another fold's, another format, damaged)."""


class Codec(Protocol[F]):
    """How one kind of fold is imaged and restored."""

    format: int
    """Bumped whenever the image changes shape: older snapshots are then skipped, not misread."""

    def image_of(self, fold: F) -> Image: ...

    def restore(self, fold: F, data: bytes, digest: str | None = None) -> None:
        """Continue ``fold`` from an image (whose digest, given, must match); raise ``ImageError``
        and leave the fold as it was if the image is refused."""
        ...

    def watermark(self, fold: F) -> int:
        """The stream sequence of the last message folded."""
        ...

    def summary(self, fold: F) -> str:
        """A few words on the state's size, for the log."""
        ...


# -- one envelope for every codec ---------------------------------------------------------------


class _Stored(msgspec.Struct, array_like=True):
    format: int
    fold: msgspec.Raw
    local: msgspec.Raw


_encoder = msgspec.msgpack.Encoder()
_stored = msgspec.msgpack.Decoder(_Stored)


def encode(value: Any) -> bytes:
    """msgpack of ``value``; dicts in their insertion order, so sets must be sorted before."""
    return _encoder.encode(value)


def pack(format: int, fold_part: bytes, local: Any = None) -> Image:
    """An image of the digested ``fold_part`` and the process-local ``local``."""
    data = _encoder.encode(_Stored(format, msgspec.Raw(fold_part), msgspec.Raw(_encoder.encode(local))))
    return Image(data, hashlib.sha256(fold_part).hexdigest())


def unpack(data: bytes, *, format: int, digest: str | None, what: str) -> tuple[bytes, bytes]:
    """The digested part and the local part of an image of ``format``, checked against ``digest``."""
    try:
        stored = _stored.decode(data)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise ImageError(f"not a {what} snapshot: {exc}") from exc
    if stored.format != format:
        raise ImageError(f"{what} snapshot format {stored.format}; this {what} reads {format}")
    part = bytes(stored.fold)
    if digest is not None and hashlib.sha256(part).hexdigest() != digest:
        raise ImageError("the snapshot's state does not match its digest")
    return part, bytes(stored.local)


def decoded(decoder: msgspec.msgpack.Decoder, data: bytes, what: str):
    try:
        return decoder.decode(data)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise ImageError(f"not a {what} snapshot: {exc}") from exc


# -- taking and restoring -----------------------------------------------------------------------


class Snapshotter:
    """Restores one fold at start and takes its snapshots as it goes."""

    def __init__(
        self,
        store,
        name: str,
        fold,
        codec: Codec,
        *,
        every: int,
        min_interval: float = 10.0,
        keep_recent: int = 64,
        config: dict | None = None,
        config_digest: str | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.store = store
        self.name = name
        """The fold's name in the store: ``allocator-<pool>``, ``binder``, ``agent-<node>``..."""
        self.fold = fold
        self.codec = codec
        self.every = every
        self.min_interval = min_interval
        self.keep_recent = keep_recent
        self.config = config
        """The configuration the fold is built under, recorded with each snapshot (the allocator's)."""
        self.config_digest = config_digest
        """Only snapshots taken under this configuration are restored (None: any)."""
        self.clock = clock
        self.newest = 0
        """The sequence of the newest snapshot stored (or restored)."""
        self._last_taken = float("-inf")

    async def restore(self, first_seq: int, last_seq: int | None = None) -> int:
        """Restore the newest usable snapshot into the fold; the sequence to fold on from.

        ``first_seq`` and ``last_seq`` are the stream's first and last sequences: a snapshot whose tail
        the stream no longer holds is of no use, and one past the stream's last message is refused (no
        fold of this stream took it: restored, the fold would skip every message up to its sequence).
        """
        metas = await self.store.list(self.name)
        if last_seq is not None:
            for meta in metas:
                if meta.seq > last_seq:
                    log.warning(
                        "snapshot %s refused: its sequence is past the stream's last, %d", meta.key, last_seq
                    )
            metas = [m for m in metas if m.seq <= last_seq]
        self.newest = max((m.seq for m in metas), default=0)
        started = time.perf_counter()

        def restore(meta: sn.SnapshotMeta, image: bytes) -> None:
            self.codec.restore(self.fold, image, meta.digest)

        kw = {"format": self.codec.format, "at_least": first_seq - 1, "at_most": last_seq}
        meta = await sn.restore_newest(self.store, self.name, restore, config_digest=self.config_digest, **kw)
        if meta is None and self.config_digest:
            # A fold's state is what the log says, whatever configuration folded it, beyond what its codec
            # checks on restore (and refuses): after a configuration change, a snapshot taken under the
            # old one serves, where folding again from the stream would lack what retention purged.
            meta = await sn.restore_newest(self.store, self.name, restore, **kw)
        if meta is None:
            if first_seq > 1:
                # Silently folding what is left would give a state without the purged history.
                log.warning(
                    "%s: no usable snapshot (format %d%s) covers sequences before %d, which the stream "
                    "no longer holds: the state folded from here lacks them; the archive keeps them "
                    "(muster replay --source postgres)", self.name, self.codec.format,
                    f", configuration {self.config_digest}" if self.config_digest else "", first_seq,
                )  # fmt: skip
            return 1
        log.info(
            "%s: restored its state at sequence %d (%s) in %.2fs", self.name, meta.seq,
            self.codec.summary(self.fold), time.perf_counter() - started,
        )  # fmt: skip
        return meta.seq + 1

    def due(self, *, live: bool, leader: bool = True) -> bool:
        """Whether to snapshot now: far enough past the newest, and (once live) the leader's turn, if
        the fold has one, and not sooner than ``min_interval`` after the last."""
        if self.every <= 0 or self.codec.watermark(self.fold) - self.newest < self.every:
            return False
        if not live:
            return True
        return leader and self.clock() - self._last_taken >= self.min_interval

    def seal(self) -> tuple[sn.SnapshotMeta, bytes]:
        """A snapshot of the fold as it is now, ready to store: taken at once, between two messages
        (a fold whose state also moves outside its handler takes it where that cannot happen)."""
        image = self.codec.image_of(self.fold)
        return sn.sealed(
            self.name,
            self.codec.watermark(self.fold),
            image.data,
            digest=image.digest,
            format=self.codec.format,
            config_digest=self.config_digest or "",
            config=self.config,
        )

    async def put(self, sealed: tuple[sn.SnapshotMeta, bytes]) -> sn.SnapshotMeta:
        """Store a sealed snapshot, and prune the ones no longer worth keeping."""
        meta, data = sealed
        await self.store.put(meta, data)
        self.newest = meta.seq
        self._last_taken = self.clock()
        for old in sn.to_prune(
            await self.store.list(self.name), keep_recent=self.keep_recent, band=self.every * 16
        ):
            await self.store.delete(old)
        return meta

    async def take(self, sealed: tuple[sn.SnapshotMeta, bytes] | None = None) -> sn.SnapshotMeta:
        """Store a snapshot of the fold as it is now (or the one ``sealed`` before), and prune the ones
        no longer worth keeping."""
        meta = await self.put(sealed or self.seal())
        log.info("%s: snapshot at sequence %d (%d bytes)", self.name, meta.seq, meta.size)
        return meta


def settings(env: Mapping[str, str]) -> dict[str, float | int]:
    """``MUSTER_SNAPSHOT_EVERY`` (messages, default 10000; 0 takes none),
    ``MUSTER_SNAPSHOT_MIN_INTERVAL`` (seconds, default 10) and ``MUSTER_SNAPSHOT_KEEP`` (the newest
    kept whole, default 64: a window replay anywhere in their span starts at most ``every`` messages
    before it; older ones are thinned to one per 16 × ``every`` messages), as ``Snapshotter``
    arguments."""
    return {
        "every": int(env.get("MUSTER_SNAPSHOT_EVERY", "10000")),
        "min_interval": float(env.get("MUSTER_SNAPSHOT_MIN_INTERVAL", "10")),
        "keep_recent": int(env.get("MUSTER_SNAPSHOT_KEEP", "64")),
    }


async def restored(
    bus, name: str, fold, codec: Codec, *, owner: str, env: Mapping[str, str]
) -> tuple[Snapshotter, int]:
    """A service fold's ``Snapshotter``, over ``owner``'s store and the settings in ``env``, with the
    newest usable snapshot restored into ``fold``; and the stream sequence to fold on from."""
    from muster.snapshots import ObjectStoreSnapshots

    snapshots = Snapshotter(
        await ObjectStoreSnapshots.open(bus.js, bus.subjects.stream, owner),
        name,
        fold,
        codec,
        **settings(env),
    )
    return snapshots, await snapshots.restore(await bus.first_seq(), await bus.last_seq())


async def keep_snapshotted(
    snapshots: Snapshotter, turn: asyncio.Lock, catch_up: Callable[[], Awaitable[None]], stop: asyncio.Event
) -> None:
    """Until ``stop``: now and then, in ``turn`` with the fold's own writes, ``catch_up`` (move the
    fold's watermark to the log's end) and snapshot if due.

    For a fold of a subject its service alone writes: with no write in flight, every message of it on
    the log is one the fold holds, so the fold is the fold through the log's end, and its snapshots keep
    up with the log while it is quiet (stream retention waits for every fold's snapshots)."""
    while not stop.is_set():
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(stop.wait(), max(1.0, snapshots.min_interval))
        try:
            async with turn:
                await catch_up()
                if snapshots.due(live=True):
                    await snapshots.take()
        except Exception:  # noqa: BLE001 — a snapshot missed is taken at the next look
            log.warning("%s not snapshotted this time", snapshots.name, exc_info=True)
