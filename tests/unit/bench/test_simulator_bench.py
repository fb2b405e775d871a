"""The simulator's benchmark over the Philly trace (issue #26): prefixes and the whole trace, timed."""

from __future__ import annotations

import datetime as dt

from muster.bench import simulator


def _rows(*jobs: tuple[str, int, int, str]) -> list[dict]:
    return [
        {
            "submitted": dt.datetime.fromisoformat(at).timestamp(),
            "duration": str(d),
            "num_gpus": str(g),
            "cluster": vc,
        }
        for at, d, g, vc in jobs
    ]


def test_only_jobs_submitted_from_the_first_of_october_count():
    rows = _rows(
        ("2017-09-30 23:59:59", 60, 1, "a"), ("2017-10-01 00:00:00", 60, 1, "a"), ("2017-10-02", 9, 2, "b")
    )
    assert [r["num_gpus"] for r in simulator.rows_since(rows)] == ["1", "2"]


def test_a_prefix_row_times_building_and_simulating_its_jobs():
    rows = _rows(
        *[(f"2017-10-01 0{i % 10}:00:00", 600 + i, [1, 8, 16][i % 3], f"vc{i % 2}") for i in range(12)]
    )
    row = simulator.measure(rows, 5, nodes=2)
    assert row["jobs"] == 5 and row["cycles_run"] <= row["cycles"]
    assert row["wall_s"] >= row["setup_s"] and row["wall_s"] >= row["simulate_s"]
    assert "met" not in row


def test_the_whole_traces_row_says_whether_it_met_the_target():
    rows = _rows(("2017-10-01 00:00:00", 60, 1, "a"), ("2017-10-01 00:00:30", 60, 16, "b"))
    row = simulator.measure(rows, nodes=2)
    assert row["jobs"] == 2 and row["target_s"] == simulator.TARGET_S
    assert row["met"] is (row["wall_s"] <= simulator.TARGET_S)
