"""`muster bench philly` as a person runs it: on a data folder, a row per (policy, load), the JSON and
the plots under --out; bad input refused by name."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from muster.cli.main import main

JOBS = """timestamp,duration,num_gpus,gpu_time,cluster
2017-09-30 23:00:00,600,1,600,a
2017-10-01 00:00:00,3600,8,28800,a
2017-10-01 00:01:00,1200,16,19200,b
2017-10-01 00:02:00,600,2,1200,tiny
2017-10-01 00:03:00,600,1,600,b
"""


@pytest.fixture
def data(tmp_path: Path) -> Path:
    folder = tmp_path / "data"
    (folder / "helios_artifact").mkdir(parents=True)
    (folder / "philly.csv").write_text(JOBS)
    (folder / "helios_artifact" / "philly_vc.csv").write_text("vc,node num\na,2\nb,1\n")
    return folder


@pytest.mark.slow
def test_each_policy_at_each_load_is_a_row_saved_with_its_plots_and_printed_in_a_table_per_load(
    data, tmp_path, capsys
):
    out = tmp_path / "out"
    assert main(["bench", "philly", "--data", str(data), "--jobs", "all", "--out", str(out)]) == 0
    rows = json.loads((out / "bench-philly-all.json").read_text())
    assert [(r["policy"], r["load"]) for r in rows] == [
        (p, load) for load in (1, 4, 8) for p in ("strict", "borrow", "default", "time-fair")
    ]
    assert all(r["jobs"] == 4 for r in rows)  # from 2017-10-01 on
    plots = sorted(p.name for p in out.glob("*.png"))
    assert "philly-all-summary.png" in plots and "philly-all-x8-wait-cdf.png" in plots
    lines = capsys.readouterr().out.splitlines()
    titles = [line for line in lines if line.startswith("philly: 4 jobs on 24 GPUs, load")]
    assert titles == [f"philly: 4 jobs on 24 GPUs, load x{n}" for n in (1, 4, 8)]
    assert sum(1 for line in lines if line.startswith("time-fair ")) == 3


def test_json_prints_the_rows_of_the_first_n_jobs(data, tmp_path, capsys, monkeypatch):
    from muster.bench import philly_plots

    monkeypatch.setattr(philly_plots, "write_plots", lambda *_args: [])  # plots: the test above
    assert (
        main(["bench", "philly", "--data", str(data), "--jobs", "2", "--out", str(tmp_path), "--json"]) == 0
    )
    rows = json.loads(capsys.readouterr().out)
    assert len(rows) == 12 and all(r["jobs"] == 2 for r in rows)
    assert json.loads((tmp_path / "bench-philly-2.json").read_text()) == rows


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--jobs", "0"], "--jobs"),
        (["--jobs", "many"], "--jobs"),
        (["--quick", "--jobs", "5"], "--jobs: not with --quick"),
        (["--speed", "--jobs", "5"], "not with --speed"),
        (["--data", "/nonexistent/philly"], "/nonexistent/philly/philly.csv"),
    ],
)
def test_bad_input_exits_2_naming_what_is_wrong(args, said, tmp_path, capsys):
    assert main(["bench", "philly", "--out", str(tmp_path), *args]) == 2
    assert said in capsys.readouterr().err
