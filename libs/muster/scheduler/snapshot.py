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

The state images itself section by section (``ClusterState.image``); here the sections' fields are
written as one map, in the order they have always had, so the bytes (and the digest) stay as they were.
Every attribute of the state and of each section is either imaged or named a cache of its class; a
test holds the lists to the classes, and a field a section images must be given its place in
``FIELD_ORDER`` (and ``FORMAT`` bumped), or this module does not load.
"""

from __future__ import annotations

import hashlib
import typing

import msgspec

from muster import events as ev
from muster.fencing import EpochFence
from muster.scheduler.fold import AllocatorFold
from muster.scheduler.state import ClusterState, StateImage
from muster.snapshotting import Image, ImageError, decoded, encode, pack, unpack

FORMAT = 10
"""Bumped whenever the image changes shape or meaning: older snapshots are then skipped, not misread.
(3: a queue's allocated sums count its pipelined pods. 4: nodes say what they run, pods what they are.
5: nodes carry taints, pods tolerations and required node affinity.
6: jobs hold their own stale-gang grace, preemption delay and last eviction time.
7: a job holds its sub-group tree and min_subgroup.
8: the usage window is its whole setting (type, size, tumbling start, cron), not its size alone.
9: pods carry their labels and pod affinity and anti-affinity terms, required and preferred.
10: a sub-group may carry its own topology constraint, and a sub-group's defaults are not written.)"""

FIELD_ORDER = (
    "pools",
    "usage_window",
    "forget_finished",
    "finished",
    "version",
    "nodes",
    "free_slots",
    "slot_names",
    "ints",
    "dev",
    "ext",
    "ext_names",
    "jobs",
    "queues",
    "queue_sums",
    "pending_jobs",
    "running_jobs",
    "prev_reasons",
    "node_version",
    "ranks_dirty",
    "queue_version",
    "clock",
    "stale_candidates",
    "stale_since",
    "usage",
    "min_runtime_used",
    "shapes",
    "adoptions",
    "awaiting_adoption",
    "evicted_unclocked",
    "preemption_delay_used",
)
"""The state's fields in an image, in the order written: the bytes, and so the digest, depend on it."""

PARTS: tuple[type[msgspec.Struct], ...] = tuple(typing.get_type_hints(StateImage).values())
"""The image type of each part of the state (its own fields, then each section's), in ``StateImage`` order."""


def _wire_struct() -> type[msgspec.Struct]:
    """One struct with every part's fields, in ``FIELD_ORDER``."""
    types: dict[str, object] = {}
    for part in PARTS:
        for f in msgspec.structs.fields(part):
            if f.name in types:
                raise TypeError(f"two parts of the state image {f.name!r}")
            types[f.name] = f.type
    if set(types) != set(FIELD_ORDER) or len(FIELD_ORDER) != len(types):
        raise TypeError(f"FIELD_ORDER does not list exactly the fields the state images: {sorted(types)}")
    return msgspec.defstruct(
        "WireState", [(name, types[name]) for name in FIELD_ORDER], kw_only=True, module=__name__
    )


WireState = _wire_struct()
"""The state part of an image as written: every part's fields in one map."""


class FoldImage(msgspec.Struct, kw_only=True):
    """What the log alone decides: digested."""

    pool: str
    watermark: int
    logged_cycle: int
    epochs: dict[str, int]
    refused_elections: int
    last_refused: ev.LeaderElected | None
    state: WireState


class LocalImage(msgspec.Struct, kw_only=True):
    """What this process alone knows: carried, not digested."""

    last_reasons: dict[str, str]
    published_cycle: int


_fold = msgspec.msgpack.Decoder(FoldImage)
_local = msgspec.msgpack.Decoder(LocalImage)


def image_of(fold: AllocatorFold) -> Image:
    """The fold's whole state at its watermark, with its digest."""
    local = LocalImage(last_reasons=fold.engine.last_reasons, published_cycle=fold.published_cycle)
    return pack(FORMAT, _fold_part(fold), local)


def digest_of(fold: AllocatorFold) -> str:
    """The state digest of the fold now, as a snapshot taken now would record it."""
    return hashlib.sha256(_fold_part(fold)).hexdigest()


def _fold_part(fold: AllocatorFold) -> bytes:
    fields: dict[str, object] = {}
    for part in fold.engine.state.image():
        fields.update(msgspec.structs.asdict(part))
    return encode(
        FoldImage(
            pool=fold.pool,
            watermark=fold.watermark,
            logged_cycle=fold.logged_cycle,
            epochs=fold.fence.epochs,
            refused_elections=fold.fence.refused,
            last_refused=fold.fence.last_refused,
            state=WireState(**fields),
        )
    )


def _state_image(wire: msgspec.Struct) -> StateImage:
    return StateImage(
        *(part(**{name: getattr(wire, name) for name in part.__struct_fields__}) for part in PARTS)
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
    now = engine.state
    pools = sorted(now.pools) if now.pools is not None else None
    if (pools, now.usage.window, now.forget_finished) != (i.pools, i.usage_window, i.forget_finished):
        raise ImageError(
            "the snapshot was folded for other pools, usage window or forgetting of finished jobs"
        )
    state = ClusterState.restore(_state_image(i))
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
