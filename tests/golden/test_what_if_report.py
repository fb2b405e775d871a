"""`muster replay --queues ... --report`: each queue's report figures in both re-runs, side by side."""

from __future__ import annotations

import json

from muster.cli.main import main

from tests.golden.test_what_if_cli import LOG, queue_file


def test_the_json_gains_both_re_runs_reports_under_a_new_key_and_keeps_the_rest(tmp_path, capsys):
    queues = queue_file(tmp_path, set())
    assert main(["replay", "--log", str(LOG), "--queues", queues, "--json"]) == 0
    plain = json.loads(capsys.readouterr().out)
    assert main(["replay", "--log", str(LOG), "--queues", queues, "--report", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert "report" not in plain
    assert {k: v for k, v in doc.items() if k != "report"} == plain
    before, after = doc["report"]["before"], doc["report"]["after"]
    # The history's own queues: both re-runs are the same run.
    assert before == after
    assert before["cluster"]["jobs"] == 30 and before["deserved_from"] == "fair_share"
    assert set(before["queues"]) >= {"research", "vision", "nlp", "serving", "notebooks"}


def test_report_without_a_what_if_is_bad_input(capsys):
    assert main(["replay", "--log", str(LOG), "--report"]) == 2
    assert "muster report" in capsys.readouterr().err
