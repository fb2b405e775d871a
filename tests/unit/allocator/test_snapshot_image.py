"""An allocator fold's image: restored anywhere in a log, folding on gives what folding from the start gives."""

from __future__ import annotations

import asyncio
import typing
from pathlib import Path

import msgspec
import pytest
from muster.replay import load_log
from muster.scheduler import snapshot as codec
from muster.scheduler.config import AllocatorConfig
from muster.scheduler.engine import Allocator
from muster.scheduler.fold import AllocatorFold, consumed_subjects
from muster.scheduler.state import SECTIONS, ClusterState, StateImage
from muster.scheduler.state.usage import UsageHistory, UsageImage
from muster.snapshots import DirectorySnapshots
from muster.snapshotting import Snapshotter
from muster.subjects import Subjects, subject_matches

from tests.unit.snapshots.logs import digests_under_two_hash_seeds

GOLDEN = Path(__file__).parents[2] / "golden" / "demo-4-nodes-30-jobs.jsonl"


def new_fold(pool: str = "default") -> AllocatorFold:
    return AllocatorFold(Allocator(AllocatorConfig(), frozenset({pool})), pool)


@pytest.fixture(scope="module")
def messages():
    wanted = consumed_subjects(Subjects("muster"), "default")
    return [m for m in load_log(GOLDEN) if any(subject_matches(p, m.subject) for p in wanted)]


def fold_all(fold: AllocatorFold, messages) -> AllocatorFold:
    for m in messages:
        fold.fold(m.seq, m.events)
    return fold


@pytest.mark.parametrize("split", [0.1, 0.35, 0.5, 0.8, 1.0])
def test_a_fold_restored_mid_log_ends_with_the_image_of_a_fold_from_the_start(messages, split):
    k = int(len(messages) * split)
    restored = new_fold()
    codec.restore_image(restored, codec.image_of(fold_all(new_fold(), messages[:k])).data)
    fold_all(restored, messages[k:])
    assert codec.image_of(restored).data == codec.image_of(fold_all(new_fold(), messages)).data


def test_a_fold_restored_mid_log_decides_what_a_fold_from_the_start_decides(messages):
    k = len(messages) // 3
    restored = new_fold()
    codec.restore_image(restored, codec.image_of(fold_all(new_fold(), messages[:k])).data)
    whole = new_fold()
    for m in messages[:k]:
        whole.fold(m.seq, m.events)
    for m in messages[k:]:
        whole.fold(m.seq, m.events)
        restored.fold(m.seq, m.events)
        a, b = whole.cycle(m.seq * 1.0, epoch=1), restored.cycle(m.seq * 1.0, epoch=1)
        assert (a.decisions, a.completed, a.queue_status) == (b.decisions, b.completed, b.queue_status)


def test_the_image_carries_the_watermark_the_epochs_and_the_last_cycle(messages):
    fold = fold_all(new_fold(), messages)
    restored = new_fold()
    codec.restore_image(restored, codec.image_of(fold).data)
    assert (restored.watermark, restored.fence.epochs, restored.last_cycle) == (
        fold.watermark,
        fold.fence.epochs,
        fold.last_cycle,
    )
    assert restored.next_cycle == fold.next_cycle > 1


def test_the_image_carries_why_jobs_waited_at_the_last_cycle():
    # Not on the log: the last cycle's reasons are what views show for a waiting job.
    fold = new_fold()
    fold.engine._last_reasons = {"train": "no node has 8 free GPUs"}
    restored = new_fold()
    codec.restore_image(restored, codec.image_of(fold).data)
    assert restored.engine.last_reasons == {"train": "no node has 8 free GPUs"}


PART_CLASSES = {"cluster": ClusterState, **SECTIONS}
PART_IMAGES = typing.get_type_hints(StateImage)


def unimaged(cls: type, image_type: type[msgspec.Struct]) -> set[str]:
    """Attributes of a new ``cls`` its image type leaves out (by the names ``IMAGED_AS`` gives them),
    other than caches and sections, and fields of the image type no attribute fills."""
    attributes = set(vars(cls())) - cls.CACHES - set(SECTIONS)
    fields = set(image_type.__struct_fields__)
    missing = {a for a in attributes if not set(cls.IMAGED_AS.get(a, (a,))) <= fields}
    covered = {f for a in attributes for f in cls.IMAGED_AS.get(a, (a,))}
    return missing | (fields - covered)


@pytest.mark.parametrize("part", StateImage._fields)
def test_every_attribute_of_each_part_of_the_state_is_imaged_or_named_a_cache(part):
    assert unimaged(PART_CLASSES[part], PART_IMAGES[part]) == set()


def test_an_attribute_a_section_gains_without_imaging_it_is_caught():
    class Grown(UsageHistory):
        def __init__(self) -> None:
            super().__init__()
            self.peak = 0.0

    assert unimaged(Grown, UsageImage) == {"peak"}


def test_the_image_writes_every_field_of_every_part_in_the_order_of_the_format():
    fields = [f for image_type in PART_IMAGES.values() for f in image_type.__struct_fields__]
    assert sorted(fields) == sorted(codec.FIELD_ORDER)
    assert codec.WireState.__struct_fields__ == codec.FIELD_ORDER


def test_an_image_of_another_pool_is_refused():
    with pytest.raises(codec.ImageError, match="pool 'a'"):
        codec.restore_image(new_fold("b"), codec.image_of(new_fold("a")).data)


def test_bytes_that_are_not_an_image_are_refused_and_leave_the_fold_as_it_was():
    fold = new_fold()
    with pytest.raises(codec.ImageError):
        codec.restore_image(fold, b"\x93not an image")
    assert fold.watermark == 0 and not fold.engine.state.jobs


def test_a_fold_that_ran_cycles_and_one_that_did_not_have_the_same_digest(messages):
    # The leader runs cycles, a standby only folds: both hold the state the log decides.
    leader, standby = new_fold(), new_fold()
    for m in messages:
        leader.fold(m.seq, m.events)
        standby.fold(m.seq, m.events)
        leader.cycle(1e9, epoch=leader.log_epoch)
    leader.published(leader.last_cycle + 5)
    assert codec.digest_of(leader) == codec.digest_of(standby)


def test_an_image_whose_state_does_not_match_the_digest_given_is_refused(messages):
    image = codec.image_of(fold_all(new_fold(), messages[:10]))
    with pytest.raises(codec.ImageError, match="digest"):
        codec.restore_image(new_fold(), image.data, "0" * 64)
    restored = new_fold()
    codec.restore_image(restored, image.data, image.digest)
    assert restored.watermark == messages[9].seq


def test_the_digest_does_not_depend_on_the_process_string_hashing():
    script = (
        "from tests.unit.allocator.test_snapshot_image import GOLDEN, new_fold\n"
        "from muster.replay import load_log\n"
        "from muster.scheduler import snapshot as codec\n"
        "f = new_fold()\n"
        "for m in load_log(GOLDEN): f.fold(m.seq, m.events)\n"
        "print(codec.digest_of(f))\n"
    )
    digests = digests_under_two_hash_seeds(script)
    assert len(digests) == 1


def snapshotter(tmp_path, fold: AllocatorFold, config: AllocatorConfig) -> Snapshotter:
    return Snapshotter(
        DirectorySnapshots(tmp_path),
        "allocator-default",
        fold,
        codec.AllocatorCodec(),
        every=1,
        config_digest=config.digest(),
    )


def test_after_a_configuration_change_a_fold_restores_a_snapshot_of_the_old_one(tmp_path, messages):
    k = len(messages) // 2
    old = fold_all(new_fold(), messages[:k])
    asyncio.run(snapshotter(tmp_path, old, AllocatorConfig()).take())
    spread = AllocatorConfig(placement_gpu="spread")
    restarted = AllocatorFold(Allocator(spread, frozenset({"default"})), "default")
    # The stream no longer holds the log before the snapshot: without it, the fold would lack it all.
    start = asyncio.run(snapshotter(tmp_path, restarted, spread).restore(first_seq=messages[k].seq))
    assert start == messages[k - 1].seq + 1
    restored = fold_all(restarted, messages[k:])
    whole = fold_all(AllocatorFold(Allocator(spread, frozenset({"default"})), "default"), messages)
    assert codec.digest_of(restored) == codec.digest_of(whole)


def test_a_snapshot_folded_another_way_is_still_refused_after_a_configuration_change(tmp_path, messages):
    k = len(messages) // 2
    asyncio.run(snapshotter(tmp_path, fold_all(new_fold(), messages[:k]), AllocatorConfig()).take())
    forgetting = AllocatorConfig(forget_finished=True)
    restarted = AllocatorFold(Allocator(forgetting, frozenset({"default"})), "default")
    assert asyncio.run(snapshotter(tmp_path, restarted, forgetting).restore(first_seq=messages[k].seq)) == 1


@pytest.mark.parametrize(
    "settings",
    [
        {"placement_gpu": "spread"},
        {"placement_cpu": "spread"},
        {"actions": ["allocate"]},
        {"reclaimer_utilization_multiplier": 2.0},
        {"stale_gang_grace": 5.0},
    ],
)
def test_the_state_a_log_folds_to_does_not_depend_on_how_the_allocator_decides(messages, settings):
    # What a snapshot of another configuration may be restored on: the decisions are on the log already.
    other = AllocatorFold(Allocator(AllocatorConfig(**settings), frozenset({"default"})), "default")
    half = len(messages) // 2
    assert codec.digest_of(fold_all(other, messages[:half])) == codec.digest_of(
        fold_all(new_fold(), messages[:half])
    )
    assert codec.digest_of(fold_all(other, messages[half:])) == codec.digest_of(
        fold_all(new_fold(), messages)
    )


def test_a_jobs_topology_constraint_with_its_levels_survives_an_image():
    from muster import events as ev

    topology = ev.Topology(name="dc", levels=("zone", "rack"), required="zone", preferred="rack")
    group = ev.PodGroupCreated(name="j", queue="q", topology=topology, pods=[ev.PodSpec()])
    fold = new_fold()
    fold.fold(1, [group])
    restored = new_fold()
    codec.restore_image(restored, codec.image_of(fold).data)
    assert restored.engine.state.jobs["j"].topology == topology
