"""The Philly benchmark's scenario (issue #26): jobs arrive at their submission, gangs split into pods."""

from __future__ import annotations

from muster.bench import philly


def _rows(*jobs: tuple[float, int, int, str]) -> list[dict]:
    return [
        {"submitted": at, "duration": str(duration), "num_gpus": str(gpus), "cluster": vc}
        for at, duration, gpus, vc in jobs
    ]


def test_jobs_arrive_seconds_after_the_first_submission_in_one_queue_per_virtual_cluster():
    doc = philly.philly_scenario(
        2, rows=_rows((1000.0, 50, 1, "a1"), (1090.0, 70, 2, "b2"), (2000.0, 1, 1, "c"))
    )
    assert [(j["submitted_at"], j["duration"], j["queue"]) for j in doc["jobs"]] == [
        (0.0, 50.0, "vc-a1"),
        (90.0, 70.0, "vc-b2"),
    ]
    assert [q["name"] for q in doc["queues"]] == ["vc-a1", "vc-b2"]


def test_a_job_larger_than_a_node_is_a_gang_of_whole_node_pods_else_of_four_gpu_pods():
    doc = philly.philly_scenario(3, rows=_rows((0.0, 1, 4, "a"), (0.0, 1, 16, "a"), (0.0, 1, 12, "a")))
    assert [j["pods"] for j in doc["jobs"]] == [
        [{"count": 1, "resources": {"gpu": 4}}],
        [{"count": 2, "resources": {"gpu": 8}}],
        [{"count": 3, "resources": {"gpu": 4}}],
    ]


def test_both_ways_of_simulating_a_trace_agree_and_skipping_runs_fewer_cycles():
    rows = _rows(*[(i * 400.0, 900 + 37 * i, [1, 2, 8, 16][i % 4], f"vc{i % 3}") for i in range(40)])
    row = philly.measure(40, rows=rows)
    assert row["same_result"] is True
    assert row["completed"] == 40
    assert row["skip_cycles_run"] < row["cycles"]
