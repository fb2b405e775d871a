"""The Philly trace as a scenario (issue #26): queues and quotas from the virtual clusters' sizes, jobs
from a date on, gangs of 8-GPU pods, time compressed, and Pollux's 160-job sample."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from muster.bench import philly_trace as trace
from muster.bench.philly_trace import TraceError, TraceJob
from muster.scenario import parse_scenario

DAY = 86400.0
OCT_1 = dt.datetime(2017, 10, 1, tzinfo=dt.UTC).timestamp()


def write_folder(tmp_path: Path, jobs: str, vcs: str = "vc,node num\na,2\nb,1\n") -> Path:
    (tmp_path / "philly.csv").write_text("timestamp,duration,num_gpus,gpu_time,cluster\n" + jobs)
    (tmp_path / "helios_artifact").mkdir()
    (tmp_path / "helios_artifact" / "philly_vc.csv").write_text(vcs)
    return tmp_path


def job(at: float, duration: float = 600.0, gpus: int = 1, cluster: str = "a") -> TraceJob:
    return TraceJob(submitted=at, duration=duration, gpus=gpus, cluster=cluster)


def test_jobs_are_read_in_submission_order_ties_in_file_order_with_times_as_utc(tmp_path):
    folder = write_folder(
        tmp_path,
        "2017-10-01 00:00:10,5,1,5,b\n2017-10-01 00:00:00,7,2,14,a\n2017-10-01 00:00:10,9,1,9,a\n",
    )
    jobs = trace.read_jobs(folder)
    assert [(j.submitted - OCT_1, j.duration, j.gpus, j.cluster) for j in jobs] == [
        (0.0, 7.0, 2, "a"),
        (10.0, 5.0, 1, "b"),
        (10.0, 9.0, 1, "a"),
    ]


def test_a_bad_row_is_refused_naming_the_file_and_its_line(tmp_path):
    folder = write_folder(tmp_path, "2017-10-01 00:00:00,5,1,5,a\n2017-10-01 00:00:00,5,two,5,a\n")
    with pytest.raises(TraceError, match=r"philly\.csv: line 3: .*two"):
        trace.read_jobs(folder)


def test_a_missing_file_or_column_is_refused_by_name(tmp_path):
    with pytest.raises(TraceError, match=r"philly\.csv"):
        trace.read_jobs(tmp_path)
    folder = write_folder(tmp_path, "", vcs="vc,nodes\na,2\n")
    with pytest.raises(TraceError, match="no column node num"):
        trace.read_cluster_nodes(folder)


def test_the_cluster_sizes_are_read_in_file_order(tmp_path):
    assert trace.read_cluster_nodes(write_folder(tmp_path, "")) == {"a": 2, "b": 1}


def test_jobs_are_taken_from_the_first_of_october_on_the_first_n_of_them():
    jobs = [job(OCT_1 - 1), job(OCT_1), job(OCT_1 + 5), job(OCT_1 + 9)]
    assert trace.since(jobs) == jobs[1:]
    assert trace.since(jobs, limit=2) == jobs[1:3]


def test_a_job_of_up_to_8_gpus_is_one_pod_beyond_a_gang_of_8_gpu_pods_and_one_of_the_rest():
    assert trace.gang_pods(4) == [{"count": 1, "resources": {"gpu": 4}}]
    assert trace.gang_pods(8) == [{"count": 1, "resources": {"gpu": 8}}]
    assert trace.gang_pods(16) == [{"count": 2, "resources": {"gpu": 8}}]
    assert trace.gang_pods(12) == [
        {"count": 1, "resources": {"gpu": 8}},
        {"count": 1, "resources": {"gpu": 4}},
    ]
    with pytest.raises(TraceError, match="num_gpus"):
        trace.gang_pods(0)


def test_each_sized_cluster_is_guaranteed_8_gpus_per_node_on_the_traces_own_cluster():
    assert trace.cluster_quotas({"a": 64, "b": 8, "c": 16}, 8 * 88) == {"a": 512, "b": 64, "c": 128}


def test_on_a_smaller_cluster_quotas_shrink_in_proportion_and_add_up_to_its_gpus():
    # 64 GPUs for 3 + 2 + 2 nodes: 27.43, 18.29, 18.29 -> floors 27, 18, 18; the one left goes to the
    # largest remainder.
    assert trace.cluster_quotas({"a": 3, "b": 2, "c": 2}, 64) == {"a": 28, "b": 18, "c": 18}
    # 8 GPUs for three equal clusters: 2.67 each; the two left go to the first two (ties in file order).
    assert trace.cluster_quotas({"c": 1, "a": 1, "b": 1}, 8) == {"c": 3, "a": 3, "b": 2}


def test_the_scenario_has_a_queue_per_sized_cluster_then_the_tiny_ones_with_jobs_at_quota_0():
    jobs = [job(OCT_1, cluster="z"), job(OCT_1 + 60, cluster="a"), job(OCT_1 + 90, cluster="y")]
    doc = trace.scenario(jobs, {"a": 2, "b": 1}, name="t")
    assert [(q["name"], q["resources"]["gpu"]["quota"]) for q in doc["queues"]] == [
        ("vc-a", 16),
        ("vc-b", 8),
        ("vc-y", 0),
        ("vc-z", 0),
    ]
    assert len(doc["nodes"]) == 3 and all(n["resources"] == {"gpu": 8} for n in doc["nodes"])
    parse_scenario(doc)  # a valid scenario


def test_compressing_time_brings_arrivals_closer_and_leaves_durations_as_they_were():
    jobs = [job(OCT_1, duration=100), job(OCT_1 + 400, duration=50, gpus=16)]
    doc = trace.scenario(jobs, {"a": 2}, name="t", compress=4)
    assert [(j["submitted_at"], j["duration"], j["queue"]) for j in doc["jobs"]] == [
        (0.0, 100.0, "vc-a"),
        (100.0, 50.0, "vc-a"),
    ]
    assert doc["jobs"][1]["pods"] == [{"count": 2, "resources": {"gpu": 8}}]


def test_the_scenario_runs_in_minute_cycles_skipping_idle_time_long_enough_for_every_job():
    jobs = [job(OCT_1, duration=3600), job(OCT_1 + 7200, duration=1800)]
    config = trace.scenario(jobs, {"a": 1}, name="t")["config"]
    assert config["time_step"] == 60.0 and config["skip_idle"] is True
    assert config["max_cycles"] * 60.0 >= 7200 + 3600 + 1800


def _pollux_day(day: float) -> list[TraceJob]:
    """Jobs at every hour of one day: one too short, one too large, one that qualifies, per hour."""
    jobs = []
    for hour in range(24):
        at = day + hour * 3600 + 15
        jobs += [job(at, duration=30), job(at, duration=1001 * 3600), job(at + 1, duration=120, gpus=2)]
    return jobs


def test_pollux_keeps_jobs_of_a_minute_or_more_under_1000_gpu_hours_from_2_to_10_oclock():
    sample = trace.pollux_sample(_pollux_day(OCT_1), n=8)
    assert [j.submitted for j in sample] == [h * 3600 + 16.0 for h in range(8)]  # time of day, 2 h earlier
    assert all((j.duration, j.gpus) == (120, 2) for j in sample)


def test_pollux_draws_its_sample_with_the_seed_and_orders_it_by_time_of_day():
    jobs = _pollux_day(OCT_1) + _pollux_day(OCT_1 + DAY) + _pollux_day(OCT_1 + 2 * DAY)
    first, again, other = (trace.pollux_sample(jobs, n=5, seed=s) for s in (0, 0, 1))
    assert first == again and first != other
    assert [j.submitted for j in first] == sorted(j.submitted for j in first)


def test_pollux_refuses_a_sample_larger_than_what_qualifies():
    with pytest.raises(TraceError, match="9 jobs asked, 8 qualify"):
        trace.pollux_sample(_pollux_day(OCT_1), n=9)
