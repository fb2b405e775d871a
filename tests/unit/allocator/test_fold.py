"""The shared fold: how live, replay and simulate turn log messages into the allocator's state."""

from __future__ import annotations

from muster import events as ev
from muster.cycle_record import cycle_record
from muster.scheduler.config import AllocatorConfig
from muster.scheduler.engine import Allocator
from muster.scheduler.fold import AllocatorFold

from tests.unit.allocator.builders import gang_job, gpu_nodes, queue


def fold_of(*messages: list[ev.Event], config: AllocatorConfig | None = None) -> AllocatorFold:
    """A fold of the default pool that has read ``messages`` at sequences 1, 2, ..."""
    fold = AllocatorFold(Allocator(config or AllocatorConfig(), frozenset({"default"})), "default")
    for seq, events in enumerate(messages, start=1):
        fold.fold(seq, events)
    return fold


CLUSTER = [*gpu_nodes(1, gpus=8), queue("team", gpu_quota=8)]
JOB = gang_job("team", pods=1, gpu=1, name="train")


def elected(epoch: int) -> ev.LeaderElected:
    return ev.LeaderElected(epoch=epoch, holder=f"allocator-{epoch}")


def bind(epoch: int) -> ev.BindRequested:
    return ev.BindRequested(job="train", pod=0, node="node-0", gpus=[0], epoch=epoch)


def completed(cycle: int, pool: str = "default") -> ev.CycleCompleted:
    return ev.CycleCompleted(pool=pool, cycle=cycle, watermark=0, clock=0.0)


def binds(fold: AllocatorFold) -> list[str]:
    return [d.job for d in fold.cycle(1.0, epoch=fold.log_epoch).decisions if isinstance(d, ev.BindRequested)]


# -- the fence -------------------------------------------------------------------------------------


def test_a_decision_of_the_current_epoch_is_folded():
    fold = fold_of(CLUSTER, [JOB], [elected(2)], [bind(2)])
    assert binds(fold) == []  # the pod is already placed: nothing to bind again


def test_a_deposed_leaders_decision_is_never_folded():
    fold = fold_of(CLUSTER, [JOB], [elected(2)], [bind(1)])
    assert binds(fold) == ["train"]  # the stale bind placed nothing: the job still waits


def test_the_rejection_of_a_decision_is_never_folded():
    # Only the binder answers a stale bind; folded, the answer would release a current placement.
    rejected = ev.BindRejected(job="train", pod=0, node="node-0", epoch=2, current_epoch=3)
    assert binds(fold_of(CLUSTER, [JOB], [elected(2)], [bind(2)], [rejected])) == []


def test_elections_on_the_log_set_the_pools_epoch():
    fold = fold_of([elected(3)], [ev.LeaderElected(pool="other", epoch=9, holder="x")], [elected(4)])
    assert fold.log_epoch == 4


# -- the watermark ---------------------------------------------------------------------------------


def test_the_watermark_is_the_sequence_of_the_last_message_read():
    fold = fold_of(CLUSTER)
    fold.fold(7, [JOB])
    assert fold.watermark == 7
    assert fold.cycle(0.0, epoch=0).completed.watermark == 7


def test_a_message_whose_events_are_all_fenced_off_still_moves_the_watermark():
    fold = fold_of(CLUSTER, [JOB], [elected(2)])
    fold.fold(10, [bind(1)])
    fold.fold(11, [])  # a message the bus refused: read as carrying nothing
    assert fold.watermark == 11


# -- what is news ----------------------------------------------------------------------------------


def test_the_allocators_own_records_are_not_news():
    fold = fold_of(CLUSTER)
    own = [
        ev.PendingReasons(cycle=1, clock=0.0, reasons={"train": "waits"}),
        completed(1),
        ev.QueueStatus(name="team"),
        ev.AllocatorConfigured(config={}),
        elected(1),
    ]
    assert [fold.fold(seq, [event]) for seq, event in enumerate(own, start=10)] == [False] * 5


def test_anything_else_is_news_unless_the_fence_drops_it():
    fold = fold_of(CLUSTER, [elected(2)])
    assert fold.fold(10, [JOB]) is True
    assert fold.fold(11, [bind(1)]) is False
    assert fold.fold(12, [bind(2)]) is True


# -- pending reasons -------------------------------------------------------------------------------

BACKLOG = [queue("capped", gpu_limit=0), *(gang_job("capped", name=f"job-{i:03d}") for i in range(300))]


def test_a_cycle_read_back_from_parts_knows_every_reason_it_recorded():
    fold = fold_of(CLUSTER, BACKLOG)
    first = fold.cycle(1.0, epoch=0)
    record = cycle_record(first.decisions, first.completed, budget=2_000)
    assert sum(isinstance(e, ev.PendingReasons) for e in record) > 1
    for seq, event in enumerate(record, start=fold.watermark + 1):
        fold.fold(seq, [event])
    assert fold.cycle(2.0, epoch=0).completed.pending == {}  # nothing changed since: nothing to record


def test_a_part_of_a_cycle_does_not_record_the_cycle():
    # Its CycleCompleted ends the record; a leader that died before it published no cycle.
    fold = fold_of(CLUSTER, [ev.PendingReasons(cycle=4, clock=0.0, reasons={"train": "waits"})])
    assert fold.next_cycle == 1


# -- cycle numbers ---------------------------------------------------------------------------------


def test_the_first_cycle_is_number_one():
    assert fold_of(CLUSTER).cycle(0.0, epoch=0).completed.cycle == 1


def test_cycles_are_numbered_after_the_last_one_the_log_recorded_for_the_pool():
    fold = fold_of(CLUSTER, [completed(4)], [completed(9, pool="other")], [completed(3)])
    assert fold.next_cycle == 5
    assert fold.cycle(0.0, epoch=0).completed.cycle == 5


def test_a_cycle_published_but_not_yet_read_back_is_counted():
    fold = fold_of(CLUSTER, [completed(4)])
    fold.published(5)
    assert fold.next_cycle == 6
    fold.fold(3, [completed(5)])  # its own record, read back
    assert fold.next_cycle == 6


def test_cycle_numbers_continue_across_a_config_change():
    log = [
        CLUSTER,
        [completed(1)],
        [completed(2)],
        [ev.AllocatorConfigured(config={"actions": ["allocate"]})],
    ]
    assert fold_of(*log).next_cycle == 3
    # a restarted allocator with another config is a new fold over the same log
    restarted = fold_of(*log, config=AllocatorConfig(actions=["allocate"]))
    assert restarted.next_cycle == 3
    assert restarted.cycle(0.0, epoch=0).completed.cycle == 3


def test_a_recorded_cycle_reruns_at_its_own_coordinates():
    fold = fold_of(CLUSTER, [JOB], [elected(2)])
    record = ev.CycleCompleted(cycle=12, epoch=2, watermark=3, clock=5.0, binds=1)
    again = fold.rerun(record).completed
    assert (again.cycle, again.epoch, again.watermark, again.clock) == (12, 2, 3, 5.0)
    assert fold.next_cycle == 1  # re-running a record does not number anything
