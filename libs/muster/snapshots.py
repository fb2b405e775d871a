"""Snapshots of a fold's state at a stream sequence, so a fold need not re-read the log from its start.

A snapshot is the whole state of one fold (the allocator of a pool, ...)
after the message at ``seq``, as the fold's own canonical image (typed
bytes: see ``muster.scheduler.snapshot`` and ``muster.snapshotting``): restored, folding on from
``seq + 1`` gives what folding from sequence 1 gives. Two digests guard it:

- ``digest``: the state's own digest, of what the log alone decides in it
  (the fold says which part that is). Two folds of one log agree on it in
  any process, so replay, folding the log up to a snapshot's sequence,
  recomputes it: a snapshot that does not match what the log gives is
  reported, never trusted silently; a restoring fold checks it too;
- ``sha256``: of the stored (compressed) bytes, checked before anything is
  decoded, so a torn or damaged object is never restored.

A snapshot whose format or configuration does not match what the reader
would build is skipped, and the reader folds from an older one or from the
start: a snapshot only ever saves time.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import time
import zlib
from collections.abc import Callable, Iterable
from pathlib import Path

import msgspec

from muster.stream_replicas import stream_replicas

log = logging.getLogger(__name__)

LIST_PATIENCE = 15.0
"""Seconds a listing of snapshots keeps asking a server that does not answer (one restarting)."""


class SnapshotMeta(msgspec.Struct, frozen=True, kw_only=True):
    """What a snapshot is, stored beside its bytes."""

    fold: str
    """Whose state: ``allocator-<pool>``, ``binder``, ..."""
    seq: int
    """The stream sequence of the last message folded into it."""
    digest: str
    """sha256 of the state written canonically (``state_digest``)."""
    sha256: str
    """sha256 of the stored bytes."""
    size: int
    format: int
    """The image format of the fold that took it."""
    config_digest: str = ""
    """The configuration the state was folded under, where the fold has one (the allocator's)."""
    config: dict = {}
    """That configuration itself: a reader starting from the snapshot may not see where the log records it."""
    taken_at: float = 0.0

    @property
    def key(self) -> str:
        return snapshot_key(self.fold, self.seq)


def snapshot_key(fold: str, seq: int) -> str:
    # Zero-padded so names sort in sequence order.
    return f"{fold}/{seq:020d}"


class SnapshotError(Exception):
    """A snapshot that cannot be restored: damaged, or of another format or configuration."""


def sealed(
    fold: str,
    seq: int,
    image: bytes,
    *,
    digest: str,
    format: int,
    config_digest: str = "",
    config: dict | None = None,
) -> tuple[SnapshotMeta, bytes]:
    """A snapshot of ``image`` at ``seq``, ready to store (compressed at a fast level: snapshots are
    taken while serving)."""
    data = zlib.compress(image, 1)
    meta = SnapshotMeta(
        fold=fold,
        seq=seq,
        digest=digest,
        sha256=hashlib.sha256(data).hexdigest(),
        size=len(data),
        format=format,
        config_digest=config_digest,
        config=config or {},
        taken_at=time.time(),
    )
    return meta, data


def opened(meta: SnapshotMeta, data: bytes) -> bytes:
    """The image a stored snapshot holds, after checking its bytes (the fold that restores it checks
    the state digest: only it knows which part of its image the digest covers)."""
    if hashlib.sha256(data).hexdigest() != meta.sha256:
        raise SnapshotError(f"{meta.key}: its bytes do not match their sha256")
    try:
        return zlib.decompress(data)
    except zlib.error as exc:
        raise SnapshotError(f"{meta.key}: {exc}") from exc


# -- which snapshots to keep ----------------------------------------------------------------------


def to_prune(metas: Iterable[SnapshotMeta], *, keep_recent: int, band: int) -> list[SnapshotMeta]:
    """Snapshots of one fold no longer worth keeping: all but the newest ``keep_recent``, and,
    among older ones, the first of each ``band`` of sequences, so a replay far back in history
    still finds one near where it starts."""
    ordered = sorted(metas, key=lambda m: m.seq, reverse=True)
    drop: list[SnapshotMeta] = []
    seen_bands: set[int] = set()
    for index, meta in enumerate(ordered):
        if index < keep_recent:
            continue
        b = meta.seq // band if band > 0 else 0
        if band > 0 and b not in seen_bands:
            seen_bands.add(b)
            continue
        drop.append(meta)
    return drop


def choose(
    metas: Iterable[SnapshotMeta],
    *,
    format: int,
    at_most: int | None = None,
    at_least: int = 0,
    config_digest: str | None = None,
) -> list[SnapshotMeta]:
    """Usable snapshots, newest first: at or before ``at_most``, at or after ``at_least`` (the first
    sequence the log still holds, minus one), of this format and configuration."""
    out = [
        m
        for m in metas
        if m.format == format
        and (at_most is None or m.seq <= at_most)
        and m.seq >= at_least
        and (config_digest is None or m.config_digest == config_digest)
    ]
    return sorted(out, key=lambda m: m.seq, reverse=True)


# -- stores ---------------------------------------------------------------------------------------


class DirectorySnapshots:
    """Snapshots as files: for a saved log replayed away from the system, and for tests."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)

    async def put(self, meta: SnapshotMeta, data: bytes) -> None:
        target = self.path / meta.key
        target.parent.mkdir(parents=True, exist_ok=True)
        # Written aside, then renamed: a reader never sees half a snapshot.
        partial = target.with_suffix(".partial")
        partial.write_bytes(data)
        partial.replace(target.with_suffix(".bin"))
        target.with_suffix(".json").write_bytes(msgspec.json.encode(meta))

    async def list(self, fold: str = "") -> list[SnapshotMeta]:
        """Snapshots of ``fold`` (every fold's, without one)."""
        folder = self.path / fold
        if not folder.is_dir():
            return []
        out = []
        for path in sorted(folder.glob("*.json") if fold else folder.glob("*/*.json")):
            try:
                out.append(msgspec.json.decode(path.read_bytes(), type=SnapshotMeta))
            except (OSError, msgspec.DecodeError, msgspec.ValidationError):
                log.warning("%s: not a snapshot record; skipped", path)
        return out

    async def get(self, meta: SnapshotMeta) -> bytes:
        return (self.path / meta.key).with_suffix(".bin").read_bytes()

    async def delete(self, meta: SnapshotMeta) -> None:
        for suffix in (".json", ".bin"):
            (self.path / meta.key).with_suffix(suffix).unlink(missing_ok=True)


SNAPSHOT_OWNERS = ("", "binder", "nodewatch", "queue-controller", "podgrouper", "agent")
"""The logins that write snapshots, each in its own bucket (the allocator's has no owner's name)."""


NODE_OWNER_PREFIX = "agent-"
"""Owners named so are one node's own agent login (``muster.runtime.security.agent_user``)."""

_NODE_TOKEN_KEPT = 100
"""Characters of a node's token kept whole in its bucket's name: a stream's name becomes a folder's
on the server, and a node's name may have 253."""


def snapshot_bucket(stream: str, owner: str = "") -> str:
    """The object store holding the snapshots ``owner`` (a NATS user) writes.

    One bucket per writer, so that a login may write only its own folds' snapshots: a machine agent
    cannot put a forged state where the binder or the allocator would restore it, and a node's own
    agent login (``agent-<node token>``) writes a bucket of its node's alone, so no agent can put a
    state where another node's agent would restore it. The allocators' bucket (no owner) is the one
    replay reads.
    """
    if owner.startswith(NODE_OWNER_PREFIX):
        return f"{stream}{NODE_BUCKET_INFIX}{_bucket_token(owner.removeprefix(NODE_OWNER_PREFIX))}"
    return f"{stream}_SNAPSHOTS" + (f"_{owner.upper().replace('-', '_')}" if owner else "")


NODE_BUCKET_INFIX = "_SNAPSHOTS_AGENT_"


def _bucket_token(token: str) -> str:
    # Node tokens are lower-case letters, digits, `-` and `_` (for a dot; never two in a row), so
    # upper-casing keeps them one-to-one, and a digested long one (after `__`) meets no whole one.
    if len(token) <= _NODE_TOKEN_KEPT:
        return token.upper()
    digest = hashlib.sha256(token.encode()).hexdigest()[:16]
    return f"{token[:_NODE_TOKEN_KEPT].upper()}__{digest.upper()}"


class ObjectStoreSnapshots:
    """Snapshots in a JetStream object store beside the system's stream: every instance sees them."""

    def __init__(self, store) -> None:
        self.store = store

    @classmethod
    async def open(cls, js, stream: str, owner: str = "") -> ObjectStoreSnapshots:
        """The store of ``owner``'s folds (see ``snapshot_bucket``), created if it is not there yet."""
        from nats.js import api
        from nats.js.errors import BucketNotFoundError, NotFoundError

        name = snapshot_bucket(stream, owner)
        try:
            return cls(await js.object_store(name))
        except (BucketNotFoundError, NotFoundError):
            return cls(
                await js.create_object_store(
                    name,
                    config=api.ObjectStoreConfig(storage=api.StorageType.FILE, replicas=stream_replicas()),
                )
            )

    async def put(self, meta: SnapshotMeta, data: bytes) -> None:
        from nats.js import api

        await self.store.put(
            meta.key, data, meta=api.ObjectMeta(name=meta.key, description=msgspec.json.encode(meta).decode())
        )

    async def list(self, fold: str = "") -> list[SnapshotMeta]:
        """Snapshots of ``fold`` (every fold's, without one)."""
        from nats.js.errors import NotFoundError

        from muster.unanswered import UNANSWERED

        # A service lists its snapshots as it starts, which may be while the server restarts
        # (a supervisor restarts both at once): asked again, it answers.
        deadline, delay = time.monotonic() + LIST_PATIENCE, 0.1
        while True:
            try:
                infos = await self.store.list(ignore_deletes=True)
                break
            except NotFoundError:
                return []
            except UNANSWERED:
                if time.monotonic() + delay > deadline:
                    raise
                log.warning("listing snapshots: the server does not answer; asking again")
                await asyncio.sleep(delay)
                delay = min(2.0, delay * 2)
        out = []
        prefix = f"{fold}/" if fold else ""
        for info in infos:
            if not info.name.startswith(prefix) or not info.description:
                continue
            try:
                out.append(msgspec.json.decode(info.description, type=SnapshotMeta))
            except (msgspec.DecodeError, msgspec.ValidationError):
                log.warning("snapshot %s: unreadable record; skipped", info.name)
        return out

    async def get(self, meta: SnapshotMeta) -> bytes:
        result = await self.store.get(meta.key)
        return result.data or b""

    async def delete(self, meta: SnapshotMeta) -> None:
        from nats.js.errors import NotFoundError

        with contextlib.suppress(NotFoundError):
            await self.store.delete(meta.key)


class StoreNotReadable(RuntimeError):
    """A node's snapshot store exists but this login may not read it: the NATS configuration lists the
    node's agent login and not the node among the readers' (``nats_permissions(prefix, nodes)``)."""


async def existing_stores(js, stream: str) -> list[tuple[str, ObjectStoreSnapshots]]:
    """Every snapshot writer's store that exists (none is created), with its owner's name: the
    services' and the shared agent login's, then each node's own agent login's (found by their
    streams' names; the owner is named as the bucket's name gives it). Raises ``StoreNotReadable``,
    naming the store and its node, for a node's store this login may not read."""
    from nats.js.errors import BucketNotFoundError, NotFoundError

    out = []
    for owner in SNAPSHOT_OWNERS:
        try:
            out.append((owner, ObjectStoreSnapshots(await js.object_store(snapshot_bucket(stream, owner)))))
        except (BucketNotFoundError, NotFoundError):
            continue
    for bucket in await node_buckets(js, stream):
        owner = NODE_OWNER_PREFIX + bucket.removeprefix(f"{stream}{NODE_BUCKET_INFIX}").lower()
        try:
            out.append((owner, ObjectStoreSnapshots(await _open_readable(js, bucket, owner))))
        except (BucketNotFoundError, NotFoundError):
            continue
    return out


async def _open_readable(js, bucket: str, owner: str):
    """``js.object_store(bucket)``, refused at once if the server denies this login the request.

    A denied request is dropped by the server, which says so to the connection only, and not always
    before it answers what the connection sends next: the request itself would wait out its whole
    timeout. So the request is watched beside the connection's errors, and given up as soon as the
    server's denial of it arrives."""
    nc = js._nc
    before = nc.last_error
    request = asyncio.ensure_future(js.object_store(bucket))
    while not request.done():
        await asyncio.wait({request}, timeout=_DENIAL_POLL)
        error = nc.last_error
        if error is not before and _denies(error, bucket):
            request.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await request
            raise StoreNotReadable(
                f"snapshot store {bucket} of {owner} exists, but this login may not read it: the NATS"
                f" configuration must list that node among the readers' (nats_permissions(prefix, nodes))"
            )
    return request.result()


_DENIAL_POLL = 0.05
"""Seconds between looks for the server's denial while a store is being opened."""


def _denies(error: BaseException | None, bucket: str) -> bool:
    """Whether the connection's ``error`` is the server refusing this login a request about ``bucket``."""
    text = str(error).lower()
    return "permissions violation" in text and f"obj_{bucket}".lower() in text


async def node_buckets(js, stream: str) -> list[str]:
    """The snapshot buckets of nodes' own agent logins that exist, by name."""
    prefix = f"OBJ_{stream}{NODE_BUCKET_INFIX}"
    # Names only (``STREAM.NAMES``): no stream's configuration or state is read.
    found: list[str] = []
    offset = 0
    while True:
        reply = await js._api_request(
            f"{js._prefix}.STREAM.NAMES", msgspec.json.encode({"offset": offset}), timeout=js._timeout
        )
        names = reply.get("streams") or []
        found += [n for n in names if n.startswith(prefix)]
        offset += len(names)
        if not names or offset >= reply.get("total", 0):
            return sorted(n.removeprefix("OBJ_") for n in found)


async def restore_newest(
    store,
    fold: str,
    restore: Callable[[SnapshotMeta, bytes], None],
    *,
    format: int,
    at_most: int | None = None,
    at_least: int = 0,
    config_digest: str | None = None,
) -> SnapshotMeta | None:
    """Restore the newest usable snapshot of ``fold`` through ``restore(meta, image)``; the one restored,
    or None. One that cannot be read, or that ``restore`` refuses (raising ``ValueError`` or
    ``SnapshotError``), is skipped for the next older."""
    usable = choose(
        await store.list(fold), format=format, at_most=at_most, at_least=at_least, config_digest=config_digest
    )
    for meta in usable:
        try:
            restore(meta, opened(meta, await store.get(meta)))
            return meta
        except (SnapshotError, ValueError) as exc:
            log.warning("snapshot %s not restored: %s", meta.key, exc)
        except Exception as exc:  # noqa: BLE001 — a store that cannot serve one object may serve an older one
            log.warning("snapshot %s not read: %s: %s", meta.key, type(exc).__name__, exc)
    return None


class FoldSnapshots(msgspec.Struct, frozen=True, kw_only=True):
    """What the store keeps of one fold: how many snapshots, the newest, and their bytes."""

    fold: str
    owner: str
    """The login whose store holds them ("" for the allocators')."""
    count: int
    newest_seq: int
    newest_taken_at: float
    size: int


SERVICE_FOLDS = frozenset({"binder", "nodewatch", "queue-controller"})
"""Folds of services that restart from their snapshots (with every pool's allocator, ``allocator-*``)."""


def is_service_fold(fold: str) -> bool:
    """Whether ``fold`` is a service's, which restarts from its snapshots: forgetting them would make it
    start from the stream alone, without what retention purged."""
    return fold in SERVICE_FOLDS or fold.startswith("allocator-")


def by_fold(owned: Iterable[tuple[str, SnapshotMeta]]) -> list[FoldSnapshots]:
    """(owner, snapshot) pairs summed up per fold, the fold whose newest snapshot is oldest first: it is
    the one that holds retention back the furthest."""
    groups: dict[tuple[str, str], list[SnapshotMeta]] = {}
    for owner, meta in owned:
        groups.setdefault((meta.fold, owner), []).append(meta)
    out = []
    for (fold, owner), metas in groups.items():
        newest = max(metas, key=lambda m: m.seq)
        out.append(
            FoldSnapshots(
                fold=fold,
                owner=owner,
                count=len(metas),
                newest_seq=newest.seq,
                newest_taken_at=newest.taken_at,
                size=sum(m.size for m in metas),
            )
        )
    return sorted(out, key=lambda f: (f.newest_seq, f.fold))
