"""The podgrouper's held topologies as bytes, and back: what its snapshots hold.

The held topologies are a fold of the topologies subject (the podgrouper's own declarations), read at
start; a snapshot holds them, each as the declaration that made it, and the stream sequence read
through, so a restarted podgrouper reads only what came after and retention may purge what came before.
They are written in the order the log declared them (the same in every fold of one log), so the
image's sha256 is the digest.
"""

from __future__ import annotations

import msgspec

from muster.events import TopologyDeclared
from muster.held_topologies import HeldTopologies, declaration
from muster.snapshotting import Image, decoded, encode, pack, unpack

FORMAT = 1
WHAT = "podgrouper"
"""The podgrouper's fold, as its snapshots name it; its store has the same owner."""


class HeldImage(msgspec.Struct, kw_only=True):
    watermark: int
    topologies: list[TopologyDeclared]


_held = msgspec.msgpack.Decoder(HeldImage)


class HeldTopologiesCodec:
    format = FORMAT

    def image_of(self, fold: HeldTopologies) -> Image:
        topologies = [declaration(topo) for topo in fold.by_name.values()]
        return pack(FORMAT, encode(HeldImage(watermark=fold.watermark, topologies=topologies)))

    def restore(self, fold: HeldTopologies, data: bytes, digest: str | None = None) -> None:
        part, _ = unpack(data, format=FORMAT, digest=digest, what=WHAT)
        image = decoded(_held, part, WHAT)
        fold.by_name.clear()
        for event in image.topologies:
            fold.apply(event)
        fold.watermark = image.watermark

    def watermark(self, fold: HeldTopologies) -> int:
        return fold.watermark

    def summary(self, fold: HeldTopologies) -> str:
        return f"{len(fold.by_name)} topologies"
