"""Completion knows where the running system's names go, and asks for them quietly."""

from __future__ import annotations

import os
import subprocess
import sys

from muster.cli.completion_cmd import completions
from muster.cli.main import build_parser
from muster.cli.parsing import JOBS, LIVE_JOBS, QUEUES


def test_job_names_complete_the_argument_of_why_logs_and_cancel():
    table = completions(build_parser())
    assert (table["why"].names, table["logs"].names) == ({"": JOBS}, {"": JOBS})
    # Only a job that has not finished can be cancelled.
    assert table["cancel"].names == {"": LIVE_JOBS}


def test_queue_names_complete_the_value_of_queue():
    table = completions(build_parser())
    for path in ("run", "submit", "tenant add"):
        assert table[path].names == {"--queue": QUEUES}, path
        assert "--queue" in table[path].valued


def test_a_flag_that_takes_a_value_is_known_by_both_its_names_and_a_switch_is_not():
    submit = completions(build_parser())["submit"]
    assert {"-f", "--file"} <= set(submit.valued) and "--json" not in submit.valued


def test_the_helper_with_no_system_to_ask_prints_nothing_and_says_why_on_stderr(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("MUSTER_")}
    env["MUSTER_HOME"] = str(tmp_path)
    done = subprocess.run(
        [sys.executable, "-m", "muster.cli.main", "__complete", "jobs", "tr"],
        env=env,
        capture_output=True,
        text=True,
    )
    assert (done.returncode, done.stdout) == (1, "")
    assert "no running muster system" in done.stderr


def test_the_helper_with_postgres_unreachable_prints_nothing(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("MUSTER_")}
    env.update(
        MUSTER_HOME=str(tmp_path),
        MUSTER_NATS_URL="nats://127.0.0.1:1",
        MUSTER_PG_DSN="postgresql://127.0.0.1:1/x",
    )
    done = subprocess.run(
        [sys.executable, "-m", "muster.cli.main", "__complete", "queues"],
        env=env,
        capture_output=True,
        text=True,
    )
    assert (done.returncode, done.stdout) == (1, "")
    assert "cannot read the projection" in done.stderr
