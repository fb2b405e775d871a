"""The what-if's report: GPU-hours inside the recorded window, and every job in one start category."""

from __future__ import annotations

import pytest
from muster import events as ev
from muster.replay import LoggedMessage
from muster.whatif import (
    START_CATEGORIES,
    QueuesLeftOut,
    _Usage,
    overlap,
    queues_left_out,
    read_history,
    start_category,
    what_if,
)

NODE = ev.NodeSpec(name="n0", resources=ev.Resources(gpu=2, cpu=64000, memory=2**38))
WINDOW_END = 120.0


def queue(name: str, quota: float) -> ev.QueueSpec:
    return ev.QueueSpec(name=name, resources={"gpu": ev.QueueResource(quota=quota, limit=-1)})


def job(name: str, queue: str, at: float, duration: float | None = None, **kw) -> ev.PodGroupCreated:
    """A gang of two one-GPU pods (of one two-GPU pod with ``gpu=2``)."""
    gpu = kw.pop("gpu", 1)
    pods = 2 // gpu
    return ev.PodGroupCreated(
        name=name,
        queue=queue,
        submitted_at=at,
        duration=duration,
        min_available=pods,
        pods=[ev.PodSpec(count=pods, resources=ev.Resources(gpu=gpu))],
        **kw,
    )


def history(*events: ev.Event) -> list[LoggedMessage]:
    """A log of one two-GPU node, the given queues and jobs, whose last cycle ran at WINDOW_END."""
    body = [ev.NodeRegistered(node=NODE), *events]
    body.append(ev.CycleCompleted(cycle=1, watermark=len(body), clock=WINDOW_END))
    return [LoggedMessage(i + 1, "muster.test", [e]) for i, e in enumerate(body)]


# A low-priority job takes the node at 100; a high-priority one preempts it at 105 and is pipelined
# onto its releasing GPUs until 115; the low one starts again and runs past the window's end (120), and a
# job of another queue starts only after that.
BUSY = history(
    ev.QueueUpserted(queue=queue("a", 2)),
    ev.QueueUpserted(queue=queue("b", 0)),
    job("low", "a", 100.0, duration=20.0),
    job("high", "a", 105.0, duration=10.0, priority=100, preemptible=False),
    job("late", "b", 106.0, gpu=2),
)


def test_a_run_counts_only_the_seconds_it_spent_inside_the_window():
    assert overlap(5.0, 15.0, 10.0, 20.0) == 5.0
    assert overlap(12.0, 14.0, 10.0, 20.0) == 2.0
    assert overlap(18.0, 30.0, 10.0, 20.0) == 2.0
    assert overlap(25.0, 30.0, 10.0, 20.0) == 0.0  # began after the window
    assert overlap(25.0, 20.0, 10.0, 20.0) == 0.0  # still running at the end, bound after it


def test_gpu_hours_of_running_preempted_and_pipelined_jobs_are_what_ran_inside_the_window():
    report = what_if(BUSY)
    # Queue a held both GPUs for the whole 20 s window (low, then high pipelined onto it, then low again).
    assert report["queues"]["a"]["gpu_hours_before"] == round(2 * 20 / 3600, 4)
    # late starts at 135, after the window: nothing of it falls inside.
    assert report["queues"]["b"]["gpu_hours_before"] == 0.0
    assert report["jobs"]["late"]["waited_before"] is not None
    assert all(q[k] >= 0 for q in report["queues"].values() for k in ("gpu_hours_before", "gpu_hours_after"))


def test_the_recorded_gpu_hours_are_those_of_the_logged_binds_beside_the_re_runs():
    # Recorded: the pods bound at 110 (the live cycle was slow) and still ran at the log's end, 120.
    bound = [ev.PodBound(job="low", pod=i, node="n0", gpus=[i], at=110.0) for i in range(2)]
    log = history(ev.QueueUpserted(queue=queue("a", 2)), job("low", "a", 100.0), *bound)
    a = what_if(log)["queues"]["a"]
    assert a["gpu_hours_recorded"] == round(2 * 10 / 3600, 4)
    assert a["gpu_hours_before"] == round(2 * 20 / 3600, 4)  # the re-run binds at once


@pytest.mark.parametrize(
    ("delta", "before", "after", "category"),
    [
        (-2.0, True, True, "started_earlier"),
        (3.0, True, True, "started_later"),
        (0.0, True, True, "unchanged"),
        (None, True, False, "no_longer_started"),
        (None, False, True, "started_only_after"),
        (None, False, False, "started_in_neither"),
    ],
)
def test_each_way_a_start_can_change_has_its_own_category(delta, before, after, category):
    assert start_category(delta, before, after) == category


def test_a_job_that_starts_only_in_the_what_if_is_counted_and_named_so():
    # low holds the node for good; late's queue has no quota to reclaim it with, until the what-if gives it some.
    log = history(
        ev.QueueUpserted(queue=queue("a", 0)),
        ev.QueueUpserted(queue=queue("b", 0)),
        job("low", "a", 100.0),
        job("late", "b", 101.0, gpu=2),
    )
    report = what_if(log, queues=[queue("a", 0), queue("b", 2)])
    assert report["jobs"]["late"]["category"] == "started_only_after"
    assert report["summary"]["started_only_after"] == 1


def test_the_categories_account_for_every_job():
    report = what_if(BUSY, queues=[queue("a", 2)], drop_queues=True)
    summary = report["summary"]
    assert sum(summary[c] for c in START_CATEGORIES) == summary["jobs"] == 3
    assert summary["never_started_after"] == summary["no_longer_started"] + summary["started_in_neither"]
    assert report["jobs"]["late"]["category"] == "no_longer_started"


def test_other_queues_that_leave_out_a_live_queue_are_refused_naming_it():
    with pytest.raises(QueuesLeftOut) as refused:
        what_if(BUSY, queues=[queue("a", 2)])
    assert refused.value.names == ["b"]


def test_dropping_the_queues_left_out_is_allowed_when_asked_and_reported():
    report = what_if(BUSY, queues=[queue("a", 2)], drop_queues=True)
    assert report["dropped_queues"] == ["b"]


def test_a_queue_deleted_in_the_history_is_not_live():
    log = history(
        ev.QueueUpserted(queue=queue("a", 2)),
        ev.QueueUpserted(queue=queue("gone", 0)),
        ev.QueueDeleted(name="gone"),
        job("low", "a", 100.0, duration=5.0),
    )
    assert [q.name for q in read_history(log).queues] == ["a"]
    assert queues_left_out(read_history(log).queues, [queue("a", 1)]) == []


def test_a_mig_pods_gpu_seconds_count_its_instances_slices():
    pod = ev.PodSpec(resources=ev.Resources(extended={"nvidia.com/mig-3g.40gb": 1}))
    usage = _Usage({"j": ev.PodGroupCreated(name="j", queue="a", pods=[pod])}, 0.0, 100.0)
    usage.see(ev.PodBound(job="j", pod=0, node="a100", gpus=[], at=10.0), 10.0)
    usage.see(ev.PodCompleted(job="j", pod=0, node="a100", at=30.0), 30.0)
    # one 3g instance counts 3 GPUs, for 20 s
    assert usage.close().gpu_seconds == {"a": pytest.approx(60.0)}
