"""The node monitor's image: restored anywhere in a log, folding on gives what folding from the start gives."""

from __future__ import annotations

from dataclasses import fields

import pytest
from muster.nodes import snapshot as codec
from muster.nodes.watch import NodeWatch, Watched
from muster.snapshotting import ImageError

from tests.unit.snapshots.logs import agent_run, digests_under_two_hash_seeds

SUBJECTS = ["muster.nodes.*", "muster.decisions.*", "muster.pods.*"]


def nodewatch_messages():
    return agent_run(SUBJECTS)


@pytest.fixture(scope="module")
def messages():
    return nodewatch_messages()


def fold(watch: NodeWatch, messages, clock: float = 0.0) -> NodeWatch:
    for m in messages:
        for event in m.events:
            watch.apply(event, m.seq, clock)
        watch.watermark = m.seq
    return watch


@pytest.mark.parametrize("split", [0.0, 0.2, 0.5, 0.8, 0.99, 1.0])
def test_a_monitor_restored_mid_log_ends_with_the_image_of_one_from_the_start(messages, split):
    k = int(len(messages) * split)
    restored = NodeWatch(timeout=30)
    codec.restore_image(restored, codec.image_of(fold(NodeWatch(timeout=30), messages[:k])).data, clock=0.0)
    fold(restored, messages[k:])
    whole = fold(NodeWatch(timeout=30), messages)
    assert codec.image_of(restored) == codec.image_of(whole)
    assert restored.losses_due(100.0) == whole.losses_due(100.0)
    assert restored.refusals() == whole.refusals()


def test_the_log_leaves_pods_on_agent_nodes_a_lost_node_and_a_bind_to_refuse(messages):
    watch = fold(NodeWatch(timeout=30), messages)
    assert watch.pods and watch.nodes["gpu-01"].lost and len(watch.refused) == 1


def test_a_restored_monitor_counts_every_node_as_heard_when_it_restored(messages):
    image = codec.image_of(fold(NodeWatch(timeout=30), messages, clock=5.0))
    restored = NodeWatch(timeout=30)
    codec.restore_image(restored, image.data, image.digest, clock=1000.0)
    assert {w.last_seen for w in restored.nodes.values()} == {1000.0}
    assert restored.losses_due(1020.0) == []
    assert [loss.msg_id for loss in restored.losses_due(1031.0)] == [
        "nodewatch:lost:gpu-00:0",
        "nodewatch:lost:gpu-02:0",
        "nodewatch:lost:gpu-03:0",
    ]


def test_when_nodes_were_heard_is_not_digested(messages):
    assert codec.image_of(fold(NodeWatch(timeout=30), messages, clock=1.0)) == codec.image_of(
        fold(NodeWatch(timeout=30), messages, clock=2.0)
    )


def test_every_attribute_is_imaged_or_said_why_not():
    imaged = set(codec.WatchImage.__struct_fields__)
    assert {f.name for f in fields(NodeWatch)} - set(codec.NOT_IMAGED) == imaged
    watched = {f.name for f in fields(Watched)} - set(codec.WATCHED_NOT_IMAGED)
    assert watched == set(codec.WatchedImage.__struct_fields__)


def test_an_image_that_does_not_match_its_digest_is_refused(messages):
    watch = fold(NodeWatch(timeout=30), messages[:30])
    before = codec.image_of(watch)
    with pytest.raises(ImageError, match="digest"):
        codec.restore_image(watch, codec.image_of(NodeWatch(timeout=30)).data, "0" * 64, clock=0.0)
    with pytest.raises(ImageError):
        codec.restore_image(watch, b"nonsense", clock=0.0)
    assert codec.image_of(watch) == before


def test_the_digest_does_not_depend_on_the_process_string_hashing():
    script = (
        "from tests.unit.snapshots.test_nodewatch_image import fold, nodewatch_messages\n"
        "from muster.nodes.watch import NodeWatch\n"
        "from muster.nodes import snapshot as codec\n"
        "print(codec.image_of(fold(NodeWatch(timeout=30), nodewatch_messages())).digest)\n"
    )
    assert len(digests_under_two_hash_seeds(script)) == 1
