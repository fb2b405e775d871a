"""KAI's preemption delay (kai-semantics §15): when a pending job may make reclaim, preempt or consolidate evict."""

from __future__ import annotations

import msgspec
import pytest
from muster import events as ev
from muster.scheduler import snapshot as codec
from muster.scheduler.config import AllocatorConfig
from muster.scheduler.engine import Allocator
from muster.scheduler.fold import AllocatorFold
from muster.scheduler.preemption_delay import in_preemption_delay

from tests.unit.allocator.builders import gang_job, gpu_nodes, queue


def allocator_with(job: ev.PodGroupCreated) -> Allocator:
    allocator = Allocator(AllocatorConfig(), frozenset({"default"}))
    for event in [*gpu_nodes(1, gpus=2), queue("team", gpu_quota=2), job]:
        allocator.apply(event)
    return allocator


def delayed(delay: float | None, submitted_at: float = 10.0) -> ev.PodGroupCreated:
    job = gang_job("team", pods=1, gpu=1, name="j", submitted_at=submitted_at)
    return msgspec.structs.replace(job, preemption_delay=delay)


def job_of(allocator: Allocator):
    return allocator.state.ledger.jobs["j"]


@pytest.mark.parametrize(("clock", "held"), [(10.0, True), (39.9, True), (40.0, False)])
def test_the_delay_runs_from_the_jobs_creation(clock, held):
    assert in_preemption_delay(job_of(allocator_with(delayed(30))), clock) is held


@pytest.mark.parametrize("delay", [None, 0.0])
def test_no_delay_or_zero_holds_nothing_back(delay):
    assert not in_preemption_delay(job_of(allocator_with(delayed(delay))), 10.0)


def test_an_eviction_this_cycle_starts_the_delay_again_at_the_cycles_clock():
    assert in_preemption_delay(job_of(allocator_with(delayed(30))), 100.0, evicted_this_cycle=True)


def run_and_evict(action: str) -> Allocator:
    allocator = allocator_with(delayed(30))
    allocator.apply(ev.BindRequested(job="j", pod=0, node="node-0", gpus=[0]))
    allocator.apply(ev.PodBound(job="j", pod=0, node="node-0", gpus=[0], at=50.0))
    allocator.apply(ev.EvictionRequested(job="j", pod=0, node="node-0", action=action, cycle=7))
    allocator.apply(ev.CycleCompleted(cycle=7, watermark=0, clock=120.0))
    return allocator


@pytest.mark.parametrize("action", ["reclaim", "preempt", "consolidate"])
def test_an_eviction_by_reclaim_preempt_or_consolidate_is_stamped_with_its_cycles_clock(action):
    job = job_of(run_and_evict(action))
    assert job.last_evicted_at == 120.0
    assert in_preemption_delay(job, 149.0) and not in_preemption_delay(job, 150.0)


def test_a_stale_gang_eviction_does_not_start_the_delay_again():
    assert job_of(run_and_evict("stale_gang_eviction")).last_evicted_at is None


def test_a_snapshot_between_an_eviction_and_its_cycle_record_keeps_both_to_stamp():
    def fold() -> AllocatorFold:
        return AllocatorFold(Allocator(AllocatorConfig(), frozenset({"default"})), "default")

    first = [*gpu_nodes(1, gpus=2), queue("team", gpu_quota=2), delayed(30)]
    first += [
        ev.BindRequested(job="j", pod=0, node="node-0", gpus=[0]),
        ev.PodBound(job="j", pod=0, node="node-0"),
    ]
    first += [ev.EvictionRequested(job="j", pod=0, node="node-0", action="reclaim", cycle=3)]
    before = fold()
    for seq, event in enumerate(first, start=1):
        before.fold(seq, (event,))
    restored = fold()
    codec.restore_image(restored, codec.image_of(before).data)
    restored.fold(len(first) + 1, (ev.CycleCompleted(cycle=3, watermark=0, clock=80.0),))
    assert restored.engine.state.ledger.jobs["j"].last_evicted_at == 80.0
