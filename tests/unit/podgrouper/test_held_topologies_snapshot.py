"""The podgrouper's snapshot holds its topologies as the log declared them: restored, a fold resolves as
the one imaged did, and two folds of one log image to one digest."""

from __future__ import annotations

from muster.held_topologies import HeldTopologies, declaration
from muster.held_topologies_snapshot import HeldTopologiesCodec
from muster.topologies import Level, TopologyDef

NETWORK = TopologyDef(
    "network", (Level("accelerator.nvidia.com/rack", "rack"), Level("kubernetes.io/hostname"))
)
FABRIC = TopologyDef("fabric", (Level("example.com/block", "block"),))


def folded(*topologies: TopologyDef, watermark: int = 7) -> HeldTopologies:
    held = HeldTopologies()
    for topo in topologies:
        held.apply(declaration(topo))
    held.watermark = watermark
    return held


def test_a_restored_snapshot_holds_the_topologies_and_the_watermark_imaged():
    codec = HeldTopologiesCodec()
    image = codec.image_of(folded(NETWORK, FABRIC))
    restored = HeldTopologies()
    codec.restore(restored, image.data, image.digest)
    assert restored.by_name == {"network": NETWORK, "fabric": FABRIC}
    assert restored.watermark == 7


def test_two_folds_of_one_log_image_to_one_digest():
    codec = HeldTopologiesCodec()
    assert codec.image_of(folded(NETWORK, FABRIC)).digest == codec.image_of(folded(NETWORK, FABRIC)).digest
