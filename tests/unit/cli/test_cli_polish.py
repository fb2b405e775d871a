"""The CLI as a person meets it: completion, and a status that fits an 80-column terminal."""

from __future__ import annotations

import shutil
import subprocess

import pytest
from muster.cli.completion_cmd import bash_script, words
from muster.cli.main import build_parser
from muster.cli.status_cmd import render
from rich.console import Console

STATE = {
    "queues": {
        "research": {"parent": None, "fair_share": {"gpu": 8.0}, "allocated": {"gpu": 10.0, "cpu": 40.0}},
        "vision-and-a-rather-long-name": {
            "parent": "research",
            "fair_share": {"gpu": 4.0},
            "allocated": {"gpu": 2.0},
        },
    },
    "jobs": {
        f"train-{i:03d}": {
            "status": "pending" if i % 3 else "running",
            "queue": "vision-and-a-rather-long-name",
            "pods": [] if i % 3 else [{"node": "gpu-01", "gpus": [0]}],
            "reason": "gang of 4 pods does not fit: 2 nodes have room for 1 pod each (each pod needs 8 gpu)",
        }
        for i in range(30)
    },
    "nodes": {
        f"gpu-{i:02d}": {
            "pool": "default",
            "total": {"gpu": 8.0, "cpu": 96.0},
            "free": {"gpu": 3.0, "cpu": 40.0},
        }
        for i in range(3)
    },
}


def rendered(limit=20) -> str:
    console = Console(width=80, record=True, color_system=None)
    console.print(render(STATE, limit))
    return console.export_text()


def test_status_fits_in_80_columns():
    assert max(len(line) for line in rendered().splitlines()) <= 80


def test_status_shows_fair_share_bars_and_reasons_and_says_what_it_left_out():
    text = rendered()
    assert "│" in text and "█" in text
    assert "gang of 4 pods does not fit" in text
    assert "… 10 more jobs (--all to list them)" in text
    assert "more jobs" not in rendered(limit=None)


def test_completion_knows_every_subcommand_and_its_flags():
    table = words(build_parser())
    assert {"status", "simulate", "replay", "why", "bench"} <= set(table[""])
    assert "--watch" in table["status"] and "--rate" in table["bench e2e"]


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")
def test_the_bash_script_completes_a_partial_subcommand():
    script = bash_script(build_parser())
    probe = script + '\nCOMP_WORDS=(muster sim); COMP_CWORD=1; _muster; echo "${COMPREPLY[@]}"\n'
    out = subprocess.run(["bash", "-c", probe], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["simulate"]
