"""``muster simulate``: exit codes, --json, --check reports."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from muster.cli.simulate_cmd import main

GOOD = {
    "name": "tiny",
    "description": "one job on one node",
    "config": {"actions": ["allocate"]},
    "nodes": [{"name": "node-a", "resources": {"gpu": 2, "cpu": 8, "memory": "32Gi"}}],
    "queues": [{"name": "team-a", "resources": {"gpu": {"quota": 2}}}],
    "jobs": [
        {"name": "fits", "queue": "team-a", "pods": [{"resources": {"gpu": 2}}]},
        {"name": "waits", "queue": "team-a", "submitted_at": 5, "pods": [{"resources": {"gpu": 1}}]},
    ],
    "expect": {"running": ["fits"], "pending": ["waits"], "allocated": {"team-a": {"gpu": 2}}},
}


def write(tmp_path: Path, name: str, data) -> str:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data))
    return str(path)


def test_a_malformed_scenario_exits_2_naming_file_and_field(tmp_path, capsys):
    bad = dict(GOOD, jobs=[{"name": "j", "queue": "team-a", "pods": [{"resources": {"gpu": "lots"}}]}])
    path = write(tmp_path, "bad.yaml", bad)
    assert main(["--check", path]) == 2
    assert f"{path}: jobs[0].pods[0].resources.gpu:" in capsys.readouterr().err


def test_a_missing_file_exits_2(tmp_path, capsys):
    assert main([str(tmp_path / "nope.yaml")]) == 2
    assert "nope.yaml" in capsys.readouterr().err


def test_json_prints_one_document_in_the_specified_shape(tmp_path, capsys):
    assert main(["--json", write(tmp_path, "good.yaml", GOOD)]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert set(doc) == {"scenario", "cycles", "time", "jobs", "evictions", "queues"}
    assert doc["scenario"] == "tiny"
    assert doc["jobs"]["fits"]["status"] == "running"
    assert doc["jobs"]["fits"]["pods"] == [{"node": "node-a", "gpus": [0, 1]}]
    assert doc["jobs"]["fits"]["reason"] is None
    assert doc["jobs"]["waits"] == {"status": "pending", "pods": [], "reason": doc["jobs"]["waits"]["reason"]}
    assert isinstance(doc["jobs"]["waits"]["reason"], str)
    assert doc["queues"]["team-a"]["allocated"]["gpu"] == 2.0
    assert doc["time"] == doc["cycles"] * 1.0


def test_check_passes_and_exits_0(tmp_path, capsys):
    path = write(tmp_path, "good.yaml", GOOD)
    assert main(["--check", path]) == 0
    assert f"PASS {path}" in capsys.readouterr().out


def test_check_prints_each_failed_expectation_and_exits_1(tmp_path, capsys):
    wrong = dict(GOOD, expect={"running": ["waits"], "allocated": {"team-a": {"gpu": 1}}})
    path = write(tmp_path, "wrong.yaml", wrong)
    assert main(["--check", path]) == 1
    out = capsys.readouterr().out
    assert f"FAIL {path}" in out
    assert "expect.running: waits: expected running, saw pending" in out
    assert "expect.allocated.team-a.gpu: expected 1, saw 2" in out


def test_without_json_a_table_names_every_job(tmp_path, capsys):
    assert main([write(tmp_path, "good.yaml", GOOD)]) == 0
    out = capsys.readouterr().out
    assert "scenario tiny" in out
    assert "fits" in out and "running" in out and "waits" in out and "pending" in out


def test_the_subcommand_runs_as_its_own_process(tmp_path):
    path = write(tmp_path, "wrong.yaml", dict(GOOD, expect={"running": ["waits"]}))
    done = subprocess.run(
        [sys.executable, "-m", "muster.cli.simulate_cmd", "--check", path],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1
    assert "expect.running: waits" in done.stdout


@pytest.mark.parametrize("flag", ["--json", "--check"])
def test_several_files_each_run(tmp_path, capsys, flag):
    a = write(tmp_path, "a.yaml", GOOD)
    b = write(tmp_path, "b.yaml", dict(GOOD, name="tiny-2"))
    assert main([flag, a, b]) == 0
    out = capsys.readouterr().out
    if flag == "--json":
        assert [doc["scenario"] for doc in json.loads(out)] == ["tiny", "tiny-2"]
    else:
        assert out.count("PASS ") == 2
