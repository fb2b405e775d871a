"""`muster bench philly --quick` runs end to end on the shared Philly data: Pollux's 160-job sample on
64 GPUs, four policies at three loads, and the policies differ where they must."""

from __future__ import annotations

import json

import pytest
from muster.bench.philly_outcomes import ROW_KEYS
from muster.bench.philly_trace import DATA
from muster.cli.main import main

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def rows(tmp_path_factory) -> list[dict]:
    if not (DATA / "philly.csv").is_file():
        pytest.skip(f"no Philly data at {DATA}")
    out = tmp_path_factory.mktemp("philly")
    assert main(["bench", "philly", "--quick", "--json", "--out", str(out)]) == 0
    return json.loads((out / "bench-philly-quick.json").read_text())


def row(rows: list[dict], policy: str, load: int) -> dict:
    return next(r for r in rows if (r["policy"], r["load"]) == (policy, load))


def test_every_policy_at_every_load_reports_every_figure_for_the_160_jobs(rows):
    assert len(rows) == 12 and all(tuple(r) == ROW_KEYS for r in rows)
    assert all(r["jobs"] == 160 and r["wall_s"] > 0 for r in rows)
    assert all(0 < r["utilisation"] <= 1 for r in rows)


def test_strict_quotas_never_borrow_and_the_others_do(rows):
    for load in (1, 4, 8):
        assert row(rows, "strict", load)["borrowed_gpu_hours"] == 0.0
        assert row(rows, "borrow", load)["borrowed_gpu_hours"] > 0
        assert row(rows, "default", load)["borrowed_gpu_hours"] > 0


def test_under_load_queues_wait_longest_under_strict_quotas_and_only_reclaim_cuts_starvation(rows):
    strict, borrow, default = (row(rows, p, 8) for p in ("strict", "borrow", "default"))
    assert strict["wait_mean_s"] > borrow["wait_mean_s"] and strict["wait_mean_s"] > default["wait_mean_s"]
    assert default["quota_violation_s"] < borrow["quota_violation_s"]
    assert default["evictions"] > borrow["evictions"]
