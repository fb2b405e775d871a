"""An allocator fold's state as bytes, and back: what its snapshots hold.

The image is typed data (msgspec), not pickled objects: decoding it builds
our own classes and nothing else, whatever the store holds. It has two
parts. What the log alone decides (the cluster state, the fence, the
watermark, the last cycle recorded) is written canonically: sets sorted,
caches left out, node ranks up to date, dicts in the order the log
inserted their keys (the same in every fold of one log). Two folds of the
same log bytes therefore write the same bytes there, in any process, and
its sha256 is the state's digest, which replay recomputes. What only this
process knows (why jobs waited at its last cycle, the last cycle it
published) rides beside it, undigested: a standby that never ran a cycle
and the leader hold the same state, but not the same of these.

Every attribute of ``ClusterState`` is either imaged here or named a cache
in ``CACHES``; a test holds the two lists to the class, so an attribute
added later cannot be left out of snapshots unnoticed.
"""

from __future__ import annotations

import hashlib

import msgspec
import numpy as np

from muster import events as ev
from muster.fencing import EpochFence
from muster.kernels import placement as pl
from muster.scheduler.fold import AllocatorFold
from muster.scheduler.state import ClusterState, Job, Node, PodReq
from muster.snapshotting import Image, ImageError, decoded, encode, pack, unpack

FORMAT = 3
"""Bumped whenever the image changes shape or meaning: older snapshots are then skipped, not misread.
(3: a queue's allocated sums count its pipelined pods.)"""

CACHES = frozenset({"_pending_sorted", "_pending_added", "_pending_removed", "_requests_of", "_shape_of"})
"""``ClusterState`` attributes rebuilt from the rest, and not imaged."""


class ArrayImage(msgspec.Struct, array_like=True):
    dtype: str
    shape: list[int]
    data: bytes


class ShapeImage(msgspec.Struct, array_like=True):
    pool: str
    pods: list[PodReq]
    id: int


class AdoptionImage(msgspec.Struct, array_like=True):
    job: str
    submission: str
    pods: list[int]


class StateImage(msgspec.Struct, kw_only=True):
    pools: list[str] | None
    usage_window: float | None
    forget_finished: bool
    finished: list[str]
    version: int
    nodes: dict[str, Node]
    free_slots: list[int]
    slot_names: list[str | None]
    ints: ArrayImage
    dev: ArrayImage
    ext: ArrayImage
    ext_names: list[str]
    jobs: dict[str, Job]
    queues: dict[str, ev.QueueSpec]
    queue_sums: dict[str, list[float]]
    pending_jobs: list[str]
    running_jobs: list[str]
    prev_reasons: dict[str, str]
    node_version: int
    ranks_dirty: bool
    queue_version: int
    clock: float | None
    stale_candidates: list[str]
    stale_since: dict[str, float]
    usage: dict[str, list[tuple[float, float, float, float, float]]]
    min_runtime_used: bool
    shapes: list[ShapeImage]
    adoptions: list[AdoptionImage]
    awaiting_adoption: list[tuple[str, int]]


class FoldImage(msgspec.Struct, kw_only=True):
    """What the log alone decides: digested."""

    pool: str
    watermark: int
    logged_cycle: int
    epochs: dict[str, int]
    refused_elections: int
    last_refused: ev.LeaderElected | None
    state: StateImage


class LocalImage(msgspec.Struct, kw_only=True):
    """What this process alone knows: carried, not digested."""

    last_reasons: dict[str, str]
    published_cycle: int


_fold = msgspec.msgpack.Decoder(FoldImage)
_local = msgspec.msgpack.Decoder(LocalImage)


def _array(a: np.ndarray) -> ArrayImage:
    return ArrayImage(str(a.dtype), list(a.shape), a.tobytes())


def _from_array(image: ArrayImage) -> np.ndarray:
    # A copy: the fold writes into its arrays, and a buffer over the image's bytes is read-only.
    return np.frombuffer(image.data, dtype=np.dtype(image.dtype)).reshape(image.shape).copy()


def image_of(fold: AllocatorFold) -> Image:
    """The fold's whole state at its watermark, with its digest."""
    local = LocalImage(last_reasons=fold.engine.last_reasons, published_cycle=fold.published_cycle)
    return pack(FORMAT, _fold_part(fold), local)


def digest_of(fold: AllocatorFold) -> str:
    """The state digest of the fold now, as a snapshot taken now would record it."""
    return hashlib.sha256(_fold_part(fold)).hexdigest()


def _fold_part(fold: AllocatorFold) -> bytes:
    s = fold.engine.state
    # A cycle ranks nodes lazily: rank them now, so a fold that ran no cycle (a standby, replay before
    # its first) images the same bytes as one that did.
    s.rerank()
    state = StateImage(
        pools=sorted(s.pools) if s.pools is not None else None,
        usage_window=s.usage_window,
        forget_finished=s.forget_finished,
        finished=sorted(s.finished),
        version=s.version,
        nodes=s.nodes,
        free_slots=s.free_slots,
        slot_names=s.slot_names,
        ints=_array(s.arrays.ints),
        dev=_array(s.arrays.dev),
        ext=_array(s.arrays.ext),
        ext_names=s.ext_names,
        jobs=s.jobs,
        queues=s.queues,
        queue_sums=s.queue_sums,
        pending_jobs=sorted(s.pending_jobs),
        running_jobs=sorted(s.running_jobs),
        prev_reasons=s.prev_reasons,
        node_version=s.node_version,
        ranks_dirty=s.ranks_dirty,
        queue_version=s.queue_version,
        clock=s.clock,
        stale_candidates=sorted(s.stale_candidates),
        stale_since=s.stale_since,
        usage=s.usage,
        min_runtime_used=s.min_runtime_used,
        shapes=[ShapeImage(pool, list(pods), id) for (pool, pods), id in s.shapes.items()],
        adoptions=[AdoptionImage(job, sub, sorted(pods)) for (job, sub), pods in s.adoptions.items()],
        awaiting_adoption=sorted(s.awaiting_adoption),
    )
    return encode(
        FoldImage(
            pool=fold.pool,
            watermark=fold.watermark,
            logged_cycle=fold.logged_cycle,
            epochs=fold.fence.epochs,
            refused_elections=fold.fence.refused,
            last_refused=fold.fence.last_refused,
            state=state,
        )
    )


def restore_image(fold: AllocatorFold, data: bytes, digest: str | None = None) -> None:
    """Continue ``fold`` from an image (whose digest, given, must match): the next message it folds is
    the one after the image's watermark. The fold is left as it was if the image is refused."""
    part, local_part = unpack(data, format=FORMAT, digest=digest, what="allocator")
    image = decoded(_fold, part, "allocator")
    local = decoded(_local, local_part, "allocator")
    if image.pool != fold.pool:
        raise ImageError(f"a snapshot of pool {image.pool!r} cannot continue pool {fold.pool!r}")
    i = image.state
    engine = fold.engine
    state = ClusterState(
        engine.state.pools, engine.state.usage_window, forget_finished=engine.state.forget_finished
    )
    pools = sorted(state.pools) if state.pools is not None else None
    if (pools, state.usage_window, state.forget_finished) != (i.pools, i.usage_window, i.forget_finished):
        raise ImageError(
            "the snapshot was folded for other pools, usage window or forgetting of finished jobs"
        )
    state.finished = set(i.finished)
    state.version = i.version
    state.nodes = i.nodes
    state.free_slots = i.free_slots
    state.slot_names = i.slot_names
    state.arrays = pl.NodeArrays(_from_array(i.ints), _from_array(i.dev), _from_array(i.ext))
    state.ext_names = i.ext_names
    state.jobs = _shared_requests(i.jobs)
    state.queues = i.queues
    state.queue_sums = i.queue_sums
    state.pending_jobs = set(i.pending_jobs)
    state.running_jobs = set(i.running_jobs)
    # The sorted view of pending jobs is rebuilt on first use from everything pending.
    state._pending_added = list(i.pending_jobs)
    state.prev_reasons = i.prev_reasons
    state.node_version = i.node_version
    state.ranks_dirty = i.ranks_dirty
    state.queue_version = i.queue_version
    state.clock = i.clock
    state.stale_candidates = set(i.stale_candidates)
    state.stale_since = i.stale_since
    state.usage = i.usage
    state.min_runtime_used = i.min_runtime_used
    state.shapes = {(s.pool, tuple(s.pods)): s.id for s in i.shapes}
    state.adoptions = {(a.job, a.submission): set(a.pods) for a in i.adoptions}
    state.awaiting_adoption = {(job, pod) for job, pod in i.awaiting_adoption}
    fence = EpochFence()
    fence.epochs = dict(image.epochs)
    fence.refused = image.refused_elections
    fence.last_refused = image.last_refused
    engine.restore(state, local.last_reasons)
    fold.fence = fence
    fold.watermark = image.watermark
    fold.logged_cycle = image.logged_cycle
    fold.published_cycle = local.published_cycle


class AllocatorCodec:
    """``image_of`` and ``restore_image`` as a ``muster.snapshotting.Codec``."""

    format = FORMAT

    def image_of(self, fold: AllocatorFold) -> Image:
        return image_of(fold)

    def restore(self, fold: AllocatorFold, data: bytes, digest: str | None = None) -> None:
        restore_image(fold, data, digest)

    def watermark(self, fold: AllocatorFold) -> int:
        return fold.watermark

    def summary(self, fold: AllocatorFold) -> str:
        return f"pool {fold.pool}, {len(fold.engine.state.jobs)} jobs"


def _shared_requests(jobs: dict[str, Job]) -> dict[str, Job]:
    """Jobs whose equal pod requests are one object again, as the fold shares them (most jobs repeat
    a few pod specs: a hundred thousand copies would cost memory, and nothing else)."""
    seen: dict[PodReq, PodReq] = {}
    for job in jobs.values():
        job.pods = [seen.setdefault(req, req) for req in job.pods]
    return jobs
