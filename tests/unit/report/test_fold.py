"""The report's fold on small hand-made logs; every expected figure is worked out in the comment beside it."""

from __future__ import annotations

import pytest
from muster import events as ev
from muster.report import build_report
from muster.report.fold import ReportFold

from tests.unit.report.events import bound, clock, completed, evicted, fair_share, job, node, queue

HOUR = 3600.0


def test_waits_run_from_submission_to_the_first_pod_bound():
    log = [node("n1", 8), queue("a", 8)]
    log += [job(f"j{i}", "a", 0.0) for i in range(4)]
    log += [clock(0.0), bound("j0", 0, 1.0), bound("j1", 0, 2.0), bound("j2", 0, 4.0), bound("j3", 0, 10.0)]
    wait = build_report(log).queues["a"].wait
    # Waits 1, 2, 4, 10: mean 17 / 4; p50 the 2nd of 4 sorted; p99 the 4th.
    assert (wait.count, wait.mean, wait.p50, wait.p99) == (4, 4.25, 2.0, 10.0)


def test_only_the_first_bind_counts_and_a_job_never_bound_has_no_wait():
    log = [node("n1", 8), queue("a", 8), job("gang", "a", 0.0, pods=2), job("never", "a", 0.0), clock(0.0)]
    log += [bound("gang", 0, 3.0), bound("gang", 1, 5.0), clock(9.0)]
    q = build_report(log).queues["a"]
    assert (q.jobs, q.started, q.wait.count, q.wait.mean) == (2, 1, 1, 3.0)


def test_completion_runs_from_submission_to_the_last_pod_completed():
    log = [node("n1", 8), queue("a", 8), job("j", "a", 1.0, pods=2), clock(1.0)]
    log += [bound("j", 0, 2.0), bound("j", 1, 2.0), completed("j", 0, 6.0), completed("j", 1, 8.0)]
    report = build_report(log)
    assert report.queues["a"].completion.mean == 7.0  # 8 - 1
    assert report.queues["a"].completed == 1 and report.cluster.makespan == 7.0


def test_a_job_bound_before_its_stated_submission_waited_nothing():
    # A scenario's submitted_at orders jobs; the simulator may start one earlier.
    log = [node("n1", 8), queue("a", 8), job("j", "a", 5.0), clock(0.0), bound("j", 0, 0.0)]
    assert build_report(log).queues["a"].wait.mean == 0.0


def test_an_eviction_destroys_the_run_since_the_pods_last_start_times_its_gpus():
    log = [node("n1", 8), queue("a", 8), job("j", "a", 0.0, pods=2, gpu=2), clock(0.0)]
    log += [
        bound("j", 0, 10.0, gpus=2),
        bound("j", 1, 10.0, gpus=2),
        clock(40.0),
        evicted("j", 0),
        evicted("j", 1),
    ]
    q = build_report(log).queues["a"]
    # Two pods of 2 GPUs, 30 s each since their start at 10: 120 GPU-seconds.
    assert q.evictions == 2
    assert q.evicted_gpu_seconds == pytest.approx(120.0)


def test_a_pod_evicted_twice_loses_only_each_run_since_its_latest_start():
    log = [node("n1", 8), queue("a", 8), job("j", "a", 0.0), clock(0.0), bound("j", 0, 0.0)]
    log += [clock(10.0), evicted("j", 0), bound("j", 0, 20.0), clock(25.0), evicted("j", 0)]
    q = build_report(log).queues["a"]
    assert (q.evictions, q.evicted_gpu_seconds) == (2, pytest.approx(10.0 + 5.0))


def test_pods_of_a_deleted_job_going_away_are_not_evictions():
    log = [node("n1", 8), queue("a", 8), job("j", "a", 0.0), clock(0.0), bound("j", 0, 0.0), clock(10.0)]
    log += [ev.PodGroupDeleted(name="j"), evicted("j", 0), clock(20.0)]
    q = build_report(log).queues["a"]
    assert q.evictions == 0 and q.used_gpu_seconds == pytest.approx(10.0)


def test_an_idle_queue_lends_its_quota_to_the_queue_that_borrows_it():
    # 8 GPUs, quotas 4 and 4; b runs 8 one-GPU pods for 100 s while a has nothing.
    log = [node("n1", 8), queue("a", 4), queue("b", 4), job("big", "b", 0.0, pods=8), clock(0.0)]
    log += [bound("big", i, 0.0) for i in range(8)] + [clock(100.0)]
    r = build_report(log)
    assert r.queues["b"].borrowed_gpu_seconds == pytest.approx(400.0)  # 4 above quota x 100 s
    assert r.queues["a"].lent_gpu_seconds == pytest.approx(400.0)
    assert r.queues["a"].borrowed_gpu_seconds == 0.0 and r.queues["b"].lent_gpu_seconds == 0.0
    assert r.queues["b"].used_gpu_seconds == pytest.approx(800.0)


def test_a_queue_is_starved_while_below_its_quota_with_a_job_waiting_from_its_submission_on():
    # a (quota 1) has a job submitted at 5 that binds at 8: starved 3 s, not from the log's start at 0.
    log = [node("n1", 4), queue("a", 1), job("j", "a", 5.0), clock(0.0), clock(8.0), bound("j", 0, 8.0)]
    log += [clock(20.0)]
    assert build_report(log).queues["a"].below_quota_seconds == pytest.approx(3.0)


def test_a_gang_on_two_nodes_counts_in_the_multi_node_wait_and_one_on_one_node_does_not():
    log = [node("n1", 4), node("n2", 4), queue("a", 8), job("spread", "a", 0.0, pods=2)]
    log += [job("packed", "a", 0.0, pods=2), clock(0.0)]
    log += [bound("spread", 0, 3.0, node="n1"), bound("spread", 1, 3.0, node="n2")]
    log += [bound("packed", 0, 1.0, node="n1"), bound("packed", 1, 1.0, node="n1")]
    q = build_report(log).queues["a"]
    assert (q.multi_node_wait.count, q.multi_node_wait.mean) == (1, 3.0)


def test_without_queue_status_the_deserved_share_is_the_quota_and_jain_compares_used_to_it():
    # 4 GPUs, quotas 2 and 2, 10 s: a holds 2 (ratio 1), b holds 1 (ratio 1/2): Jain 0.9.
    log = [node("n1", 4), queue("a", 2), queue("b", 2), job("ja", "a", 0.0, gpu=2), job("jb", "b", 0.0)]
    log += [clock(0.0), bound("ja", 0, 0.0, gpus=2), bound("jb", 0, 0.0), clock(10.0)]
    r = build_report(log)
    assert r.deserved_from == "quota"
    assert r.queues["b"].deserved_gpu_seconds == pytest.approx(20.0)
    assert r.cluster.jain_index == pytest.approx(0.9)
    assert any("no QueueStatus" in note for note in r.notes)


def test_with_queue_status_the_deserved_share_is_the_published_fair_share_over_time():
    log = [node("n1", 4), queue("a", 0), clock(0.0), fair_share("a", 3.0), clock(10.0), fair_share("a", 1.0)]
    log += [clock(20.0)]
    r = build_report(log)
    assert r.deserved_from == "fair_share"
    assert r.queues["a"].deserved_gpu_seconds == pytest.approx(3 * 10 + 1 * 10)


def test_utilisation_is_gpu_hours_used_over_gpu_hours_there_were():
    # 4 GPUs for 20 s; 2 used for the first 10 s: 20 of 80 GPU-seconds.
    log = [node("n1", 4), queue("a", 4), job("j", "a", 0.0, pods=2), clock(0.0)]
    log += [
        bound("j", 0, 0.0),
        bound("j", 1, 0.0),
        completed("j", 0, 10.0),
        completed("j", 1, 10.0),
        clock(20.0),
    ]
    c = build_report(log).cluster
    assert c.utilisation() == pytest.approx(0.25)
    assert c.used_gpu_seconds == pytest.approx(20.0) and c.available_gpu_seconds == pytest.approx(80.0)


def test_makespan_waits_for_every_job_to_end():
    log = [
        node("n1", 4),
        queue("a", 4),
        job("j", "a", 0.0),
        job("k", "a", 0.0),
        clock(0.0),
        bound("j", 0, 0.0),
    ]
    log += [completed("j", 0, 5.0), clock(9.0)]
    assert build_report(log).cluster.makespan is None


def test_a_parent_queue_counts_its_childrens_jobs_and_gpus():
    log = [node("n1", 8), queue("research", 8), queue("vision", 4, "research"), queue("nlp", 4, "research")]
    log += [job("v", "vision", 0.0, gpu=2), job("n", "nlp", 0.0), clock(0.0)]
    log += [bound("v", 0, 1.0, gpus=2), bound("n", 0, 3.0), clock(11.0)]
    r = build_report(log)
    research = r.queues["research"]
    assert (research.jobs, research.wait.mean) == (2, 2.0)  # waits 1 and 3
    assert research.used_gpu_seconds == pytest.approx(2 * 10 + 1 * 8)
    assert list(r.queues) == ["research", "vision", "nlp"] and r.depth["vision"] == 1


def test_time_never_runs_back_and_a_pod_handed_over_running_counts_from_its_start():
    log = [node("n1", 4), queue("a", 4), job("j", "a", 0.0), clock(50.0), bound("j", 0, 20.0), clock(60.0)]
    log += [evicted("j", 0)]
    q = build_report(log).queues["a"]
    assert q.evicted_gpu_seconds == pytest.approx(40.0)  # ran from 20 to 60
    assert q.used_gpu_seconds == pytest.approx(10.0)  # in the window it was seen in: 50 to 60


def test_a_job_without_a_submission_time_counts_as_submitted_when_the_log_created_it():
    log = [node("n1", 4), queue("a", 4), clock(100.0), job("j", "a", 0.0), bound("j", 0, 103.0)]
    r = build_report(log)
    assert r.queues["a"].wait.mean == 3.0 and r.start == 100.0
    assert any("1 jobs state no submission time" in note for note in r.notes)


def test_a_bind_of_a_job_the_log_never_created_is_left_out_and_said_so():
    log = [node("n1", 4), clock(0.0), bound("ghost", 0, 1.0), clock(2.0)]
    r = build_report(log)
    assert r.cluster.used_gpu_seconds == 0.0
    assert any("1 pods bound of jobs the log does not create" in note for note in r.notes)


def test_progress_is_reported_every_so_many_events():
    seen = []
    log = [clock(float(t)) for t in range(25_000)]
    build_report(log, progress=seen.append)
    assert seen == [10_000, 20_000]


def test_the_fold_reads_event_by_event_and_reports_at_any_point():
    fold = ReportFold()
    for e in [node("n1", 2), queue("a", 2), job("j", "a", 0.0), clock(0.0), bound("j", 0, 0.0), clock(5.0)]:
        fold.apply(e)
    assert fold.report().queues["a"].used_gpu_seconds == pytest.approx(5.0)
    fold.apply(clock(7.0))
    assert fold.report().queues["a"].used_gpu_seconds == pytest.approx(7.0)
