"""The node monitor's state as bytes, and back: what its snapshots hold.

Everything in ``NodeWatch`` is decided by the log but when each node was
last heard: that is when this process read its heartbeat, and a restarted
monitor counts every node as heard at its start (so its own restart never
declares a node lost). The image therefore leaves ``last_seen`` out, and
restoring sets it to the restoring clock. The rest is written canonically
(pods sorted, dicts in the order the log inserted their keys), so two
monitors of one log write the same bytes, whose sha256 is the digest.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import msgspec

from muster import events as ev
from muster.nodes.watch import NodeWatch, Watched
from muster.snapshotting import Image, decoded, encode, pack, unpack

FORMAT = 1

NOT_IMAGED = {"timeout": "configuration (MUSTER_NODE_TIMEOUT)"}
WATCHED_NOT_IMAGED = {"last_seen": "when this process read the node's heartbeat: the restoring clock"}


class WatchedImage(msgspec.Struct, array_like=True):
    pool: str
    lost: bool
    removed: bool
    losses: int


class WatchImage(msgspec.Struct, kw_only=True):
    watermark: int
    nodes: dict[str, WatchedImage]
    pods: list[tuple[tuple[str, int], tuple[str, str]]]
    refused: list[tuple[int, ev.BindRequested]]


_watch = msgspec.msgpack.Decoder(WatchImage)


def _part(watch: NodeWatch) -> bytes:
    return encode(
        WatchImage(
            watermark=watch.watermark,
            nodes={
                name: WatchedImage(w.pool, w.lost, w.removed, w.losses) for name, w in watch.nodes.items()
            },
            pods=sorted(watch.pods.items()),
            refused=list(watch.refused),
        )
    )


def image_of(watch: NodeWatch) -> Image:
    return pack(FORMAT, _part(watch))


def restore_image(watch: NodeWatch, data: bytes, digest: str | None = None, *, clock: float) -> None:
    """Continue ``watch`` from an image, every node heard at ``clock``; left as it was if refused."""
    part, _ = unpack(data, format=FORMAT, digest=digest, what="nodewatch")
    image = decoded(_watch, part, "nodewatch")
    watch.nodes = {
        name: Watched(pool=w.pool, last_seen=clock, lost=w.lost, removed=w.removed, losses=w.losses)
        for name, w in image.nodes.items()
    }
    watch.pods = {(key[0], key[1]): (held[0], held[1]) for key, held in image.pods}
    watch.refused = list(image.refused)
    watch.watermark = image.watermark


class NodeWatchCodec:
    format = FORMAT

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self.clock = clock

    def image_of(self, fold: NodeWatch) -> Image:
        return image_of(fold)

    def restore(self, fold: NodeWatch, data: bytes, digest: str | None = None) -> None:
        restore_image(fold, data, digest, clock=self.clock())

    def watermark(self, fold: NodeWatch) -> int:
        return fold.watermark

    def summary(self, fold: NodeWatch) -> str:
        return f"{len(fold.nodes)} agent nodes, {len(fold.pods)} pods on them"
