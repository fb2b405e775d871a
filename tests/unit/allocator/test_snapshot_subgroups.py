"""A snapshot keeps a job's sub-group tree: a restored fold holds the same tree and writes the same image."""

from __future__ import annotations

from muster import events as ev
from muster.scheduler import snapshot as codec
from muster.scheduler.config import AllocatorConfig
from muster.scheduler.engine import Allocator
from muster.scheduler.fold import AllocatorFold

TREE = [
    ev.SubGroup(name="worker", min_subgroup=2),
    ev.SubGroup(name="worker-0", parent="worker", min_available=2),
    ev.SubGroup(name="worker-1", parent="worker", min_available=0),
]


def fold_with_a_tree_job() -> AllocatorFold:
    fold = AllocatorFold(Allocator(AllocatorConfig(), frozenset({"default"})), "default")
    group = ev.PodGroupCreated(
        name="seg",
        queue="q",
        min_subgroup=1,
        subgroups=TREE,
        pods=[ev.PodSpec(count=2, subgroup="worker-0"), ev.PodSpec(count=2, subgroup="worker-1")],
    )
    fold.fold(1, [ev.UpsertQueue(queue=ev.QueueSpec(name="q")), group])
    return fold


def test_a_restored_fold_holds_the_jobs_tree_and_writes_the_same_image():
    original = fold_with_a_tree_job()
    restored = AllocatorFold(Allocator(AllocatorConfig(), frozenset({"default"})), "default")
    codec.restore_image(restored, codec.image_of(original).data)
    job = restored.engine.state.jobs["seg"]
    assert (list(job.subgroups), job.min_subgroup) == (TREE, 1)
    assert codec.image_of(restored).data == codec.image_of(original).data
