"""`muster bench e2e` without --json prints one field per row, nested results as dotted fields."""

from __future__ import annotations

from muster.cli.bench_cmd import _flat, _print_fields


def test_nested_results_become_dotted_fields_in_order():
    doc = {"binds_per_second": 9000.0, "latency_ms": {"p50": 4.0, "p99": 9.0}, "offered_rate": None}
    assert _flat(doc) == [
        ("binds_per_second", 9000.0),
        ("latency_ms.p50", 4.0),
        ("latency_ms.p99", 9.0),
        ("offered_rate", None),
    ]


def test_each_field_is_printed_on_a_row_of_its_own(capsys):
    _print_fields("e2e", {"bound": 10, "cpu_seconds": {"allocator": 1.5}})
    out = capsys.readouterr().out
    assert "cpu_seconds.allocator" in out and "1.5" in out and "bound" in out
