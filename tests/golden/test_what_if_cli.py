"""`muster replay --queues`: the what-if as a person reads it, on the recorded demo history."""

from __future__ import annotations

import re
from pathlib import Path

import yaml
from muster.cli.main import main
from muster.replay import load_log
from muster.whatif import read_history

LOG = Path(__file__).parent / "demo-4-nodes-30-jobs.jsonl"


def queue_file(tmp_path: Path, leave_out: set[str]) -> str:
    """The history's own queues, less ``leave_out``, as our queue YAML."""
    rows = []
    for q in read_history(load_log(LOG)).queues:
        if q.name in leave_out:
            continue
        row: dict = {"name": q.name, "priority": q.priority}
        if q.parent:
            row["parent"] = q.parent
        gpu = q.resources.get("gpu")
        if gpu is not None:
            row["resources"] = {
                "gpu": {"quota": gpu.quota, "over_quota_weight": gpu.over_quota_weight, "limit": gpu.limit}
            }
        rows.append(row)
    path = tmp_path / "queues.yaml"
    path.write_text(yaml.safe_dump(rows))
    return str(path)


def replay(*args: str) -> int:
    return main(["replay", "--log", str(LOG), *args])


def test_a_queue_file_leaving_out_live_queues_is_refused_naming_them(tmp_path, capsys):
    path = queue_file(tmp_path, {"notebooks", "serving"})
    assert replay("--queues", path) == 2
    err = capsys.readouterr().err
    assert f"{path}: leaves out live queues: notebooks, serving" in err
    assert "--drop-queues" in err


def test_with_drop_queues_the_jobs_of_a_dropped_queue_are_named_as_no_longer_starting(tmp_path, capsys):
    assert replay("--queues", queue_file(tmp_path, {"notebooks"}), "--drop-queues") == 0
    out = capsys.readouterr().out
    assert "queues dropped (--drop-queues): notebooks" in out
    listing = out[out.index("3 no longer start:") :]
    assert all(f"  {name}: queue notebooks" in listing for name in ("nb-003", "nb-006", "nb-027"))


def test_every_job_is_counted_in_a_named_category_and_listed_once_with_all(tmp_path, capsys):
    assert replay("--queues", queue_file(tmp_path, {"notebooks"}), "--drop-queues", "--all") == 0
    out = capsys.readouterr().out
    headline = out.splitlines()[0]
    counted = [int(n) for n in re.findall(r"(\d+) (?:start|no longer)", headline)]
    assert len(counted) == 6 and sum(counted) == 30
    listed = re.findall(r"^  (\S+): queue ", out, flags=re.MULTILINE)
    assert len(listed) == len(set(listed)) == 30


def test_drop_queues_without_other_queues_is_bad_input(capsys):
    assert replay("--drop-queues") == 2
    assert "--drop-queues" in capsys.readouterr().err


def test_the_history_s_own_queues_change_no_start(tmp_path, capsys):
    assert replay("--queues", queue_file(tmp_path, set())) == 0
    headline = capsys.readouterr().out.splitlines()[0]
    assert "0 start earlier, 0 start later, 30 start at the same time" in headline
