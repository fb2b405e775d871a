from muster.bench import allocator as bench


def test_quick_benchmark_reports_every_row_with_its_fields():
    rows = bench.run(quick=True)
    assert [r["unit"] for r in rows] == ["ms", "pods/s", "s", "s", "us"]
    for row in rows:
        assert set(row) == {"name", "value", "unit", "target", "naive_ratio"}
        assert row["value"] > 0
