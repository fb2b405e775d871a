"""Percentiles by nearest rank, summaries and Jain's index, on numbers small enough to check by hand."""

from __future__ import annotations

import pytest
from muster.report.stats import Summary, jain_index, percentile, summarize


def test_a_percentile_is_the_smallest_value_that_enough_values_do_not_exceed():
    values = [10.0, 1.0, 4.0, 2.0]  # sorted: 1, 2, 4, 10
    assert percentile(values, 50) == 2.0  # rank ceil(0.5 * 4) = 2
    assert percentile(values, 75) == 4.0  # rank 3
    assert percentile(values, 99) == 10.0  # rank ceil(3.96) = 4


def test_a_percentile_of_nothing_or_out_of_range_is_refused_naming_what():
    with pytest.raises(ValueError, match="values"):
        percentile([], 50)
    with pytest.raises(ValueError, match="p: 0"):
        percentile([1.0], 0)


def test_a_summary_counts_and_averages_and_is_empty_for_no_values():
    assert summarize([1.0, 2.0, 4.0, 10.0]) == Summary(count=4, mean=4.25, p50=2.0, p99=10.0)
    assert summarize([]) == Summary(count=0, mean=None, p50=None, p99=None)


def test_jain_is_one_for_equal_ratios_and_one_over_n_when_one_queue_has_all():
    assert jain_index([0.5, 0.5, 0.5]) == pytest.approx(1.0)
    assert jain_index([1.0, 0.0, 0.0, 0.0]) == pytest.approx(0.25)


def test_jain_of_ratios_one_and_a_half():
    # (1 + 0.5)^2 / (2 * (1 + 0.25)) = 2.25 / 2.5
    assert jain_index([1.0, 0.5]) == pytest.approx(0.9)


def test_jain_has_no_value_without_ratios_or_when_every_ratio_is_zero():
    assert jain_index([]) is None
    assert jain_index([0.0, 0.0]) is None
