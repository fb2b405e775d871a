"""`muster run` names its job by the rule for job names, before anything is sent."""

from __future__ import annotations

from muster.cli.main import main
from muster.cli.run_cmd import job_name
from muster.names import JOB


def test_a_name_given_that_kubernetes_refuses_exits_2_naming_the_flag(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("MUSTER_HOME", str(tmp_path))  # no system there: the name is refused first
    assert main(["run", "--name", "Coll x", "--queue", "q", "--", "true"]) == 2
    assert 'muster run: --name: "Coll x" is not a valid job name' in capsys.readouterr().err


def test_a_name_made_from_any_program_is_a_valid_job_name():
    for program in ["/usr/bin/trainé_v2.py", "./Train Model", "python3.11", "日本語", "--"]:
        assert JOB.refusal(job_name([program], None)) is None, program
