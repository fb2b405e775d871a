"""`muster bench cli`'s figures: the median of fresh runs against the call's target."""

from __future__ import annotations

import sys

import pytest
from muster.bench.cli import Call, row, wall_times


def test_a_row_is_the_median_in_milliseconds_against_the_target():
    found = row(Call(("--help",), 300.0), [0.25, 0.1, 0.9])
    assert found["name"] == "muster --help"
    assert (found["value"], found["min_ms"], found["max_ms"], found["runs"]) == (250.0, 100.0, 900.0, 3)
    assert found["met"] is True


def test_a_median_above_the_target_is_not_met():
    assert row(Call(("status",), 500.0), [0.6, 0.7, 0.1])["met"] is False


def test_a_call_that_fails_is_not_timed_but_refused_with_what_it_said():
    command = [sys.executable, "-c", "import sys; sys.stderr.write('no system'); sys.exit(3)"]
    with pytest.raises(RuntimeError, match="exited 3: no system"):
        wall_times(command, {}, runs=1)


def test_each_timed_run_is_a_fresh_process_after_one_uncounted(tmp_path):
    marks = tmp_path / "runs"
    command = [sys.executable, "-c", f"open({str(marks)!r}, 'a').write('x')"]
    assert len(wall_times(command, {}, runs=2)) == 2
    assert marks.read_text() == "xxx"
