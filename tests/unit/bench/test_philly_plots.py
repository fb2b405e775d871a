"""The plots of `muster bench philly` draw what the report computed, each job once."""

from __future__ import annotations

from muster.bench.philly_plots import all_waits
from muster.report import build_report

from tests.unit.report.events import bound, clock, job, node, queue


def test_the_wait_cdf_counts_each_job_once_though_its_parent_queue_lists_it_too():
    log = [node("n1", 8), queue("research", 4), queue("a", 2, "research"), queue("other", 2)]
    log += [
        job("ja", "a", 0.0),
        job("jo", "other", 0.0),
        clock(0.0),
        bound("ja", 0, 3.0),
        bound("jo", 0, 1.0),
    ]
    log += [clock(10.0)]
    assert all_waits(build_report(log)) == [1.0, 3.0]
