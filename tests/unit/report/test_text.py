"""The report as text: aligned tables, and the what-if's figures side by side."""

from __future__ import annotations

from muster.report import build_report
from muster.report.text import columns, report_lines, side_by_side

from tests.unit.report.events import bound, clock, job, node, queue


def small(wait: float):
    """One queue whose one job waited ``wait`` seconds on a 2-GPU node."""
    return build_report([node("n1", 2), queue("a", 2), job("j", "a", 0.0), clock(0.0), bound("j", 0, wait)])


def test_names_align_left_and_figures_right():
    assert columns([["queue", "GPU-h"], ["a", "1.5"], ["long-name", "12.25"]]) == [
        "queue      GPU-h",
        "a            1.5",
        "long-name  12.25",
    ]


def test_side_by_side_shows_each_figure_before_after_and_the_change():
    lines = side_by_side(small(4.0), small(1.0))
    row = next(line for line in lines if "wait mean s" in line)
    assert row.split()[-3:] == ["4.0", "1.0", "-3.0"]
    assert any(line.startswith("cluster") for line in lines)


def test_the_text_report_says_where_the_deserved_share_comes_from_and_its_notes():
    text = "\n".join(report_lines(small(1.0)))
    assert "deserved = the GPU quota" in text
    assert "note: the log carries no QueueStatus" in text
