"""Step series: a point only where the value changes; bucket means weighted by time."""

from __future__ import annotations

import pytest
from muster.report.timeline import StepSeries


def test_a_point_is_added_only_when_the_value_changes():
    s = StepSeries()
    for t, v in [(0, 1.0), (1, 1.0), (2, 3.0), (2, 1.0)]:
        s.set(t, v)
    # At 2 the value went back to 1 before time moved: nothing changed at all.
    assert (s.times, s.values) == ([0], [1.0])


def test_bucket_means_weigh_each_value_by_the_time_it_held():
    s = StepSeries()
    s.set(0.0, 4.0)
    s.set(3.0, 0.0)
    # Buckets [0, 2) and [2, 4): 4 for 2 s; then 4 for 1 s and 0 for 1 s.
    assert s.bucket_means(0.0, 4.0, 2) == pytest.approx([4.0, 2.0])


def test_before_its_first_point_a_series_is_zero_and_an_empty_window_has_no_buckets():
    s = StepSeries()
    s.set(2.0, 6.0)
    assert s.bucket_means(0.0, 4.0, 2) == pytest.approx([0.0, 6.0])
    assert s.bucket_means(4.0, 4.0, 10) == []
