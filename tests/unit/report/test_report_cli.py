"""`muster report` as a person runs it: on a scenario (simulated), on a saved log, with plots."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from muster.cli.main import main
from muster.cli.report_cmd import progress_line
from muster.replay import load_log, log_events
from muster.report import build_report
from muster.subjects import Subjects

TESTS = Path(__file__).resolve().parents[2]
LOG = TESTS / "golden" / "demo-4-nodes-30-jobs.jsonl"
DURATIONS = TESTS / "scenarios" / "duration-runs-a-queue-of-jobs-to-the-end.yaml"

QUEUE_KEYS = {
    "parent", "jobs", "started", "completed", "failed", "wait_seconds", "completion_seconds",
    "multi_node_wait_seconds", "gpu_hours_used", "gpu_hours_deserved", "gpu_hours_quota",
    "gpu_hours_fair_share", "used_to_deserved", "below_quota_with_pending_seconds", "gpu_hours_borrowed",
    "gpu_hours_lent", "evictions", "gpu_hours_evicted",
}  # fmt: skip
CLUSTER_KEYS = {
    "jobs", "started", "completed", "failed", "gpus", "gpu_hours_used", "gpu_hours_available",
    "utilisation_mean", "makespan_seconds", "jain_index", "wait_seconds", "completion_seconds", "evictions",
    "gpu_hours_evicted", "below_quota_with_pending_seconds", "gpu_hours_borrowed",
}  # fmt: skip


def report_json(capsys, *args: str) -> dict:
    assert main(["report", *args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_a_scenario_is_simulated_and_its_jobs_waits_and_gpu_hours_reported(capsys):
    # Three jobs of 4 GPUs for 2 s each on one 4-GPU node: they run one after another from clock 0.
    doc = report_json(capsys, str(DURATIONS))
    c = doc["cluster"]
    assert (c["jobs"], c["started"], c["completed"]) == (3, 3, 3)
    assert c["gpu_hours_used"] == round(3 * 4 * 2 / 3600, 6)
    assert c["makespan_seconds"] == 6.0
    # j-1 and j-2 start at (or, by the simulator, before) their submission; j-3 (submitted at 3) at 4.
    assert doc["queues"]["team-a"]["wait_seconds"] == {"count": 3, "mean": 0.333, "p50": 0.0, "p99": 1.0}
    assert doc["deserved_from"] == "fair_share" and doc["plots"] == []


def test_a_saved_log_reports_what_the_library_fold_makes_of_it(capsys):
    doc = report_json(capsys, "--log", str(LOG))
    expected = build_report(log_events(load_log(LOG), Subjects("muster"))).to_builtins()
    assert doc == {**expected, "plots": []}
    assert doc["cluster"]["jobs"] == 30 and doc["cluster"]["evictions"] == 9
    assert doc["queues"]["vision"]["parent"] == "research"


def test_the_json_document_has_its_documented_keys(capsys):
    doc = report_json(capsys, "--log", str(LOG))
    assert set(doc) == {"window", "deserved_from", "cluster", "queues", "timeline", "notes", "plots"}
    assert set(doc["cluster"]) == CLUSTER_KEYS
    assert all(set(q) == QUEUE_KEYS for q in doc["queues"].values())
    assert set(doc["timeline"]) == {"bucket_seconds", "gpus", "gpus_used", "utilisation", "queues"}
    assert all(len(series["used"]) == 100 for series in doc["timeline"]["queues"].values())


def test_plots_are_written_as_png_files_one_per_queue(tmp_path, capsys):
    doc = report_json(capsys, "--log", str(LOG), "--plots", str(tmp_path / "plots"))
    written = {Path(p).name for p in doc["plots"]}
    assert {"utilisation.png", "wait-cdf.png", "queue-vision.png", "queue-default-queue.png"} <= written
    assert len(written) == 2 + len(doc["queues"])
    assert all(Path(p).read_bytes().startswith(b"\x89PNG") for p in doc["plots"])


def test_the_text_report_names_every_queue_under_its_parent(capsys):
    assert main(["report", "--log", str(LOG)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("report over ") and "30 jobs" in out
    assert "\n  vision " in out and "\nresearch " in out
    assert "Jain's index" in out and "deserved = the allocator's fair share" in out


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["x.yaml", "--log", "y.jsonl"], "FILE and --log"),
        (["--log", "y.jsonl", "--source", "postgres"], "--source"),
        (["--log", str(DURATIONS)], f"{DURATIONS}: not a muster log"),
        ([str(LOG)], str(LOG)),
    ],
)
def test_bad_input_exits_2_naming_what_is_wrong(args, said, capsys):
    assert main(["report", *args]) == 2
    assert said in capsys.readouterr().err


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_shows_on_a_terminal_for_a_long_log_only():
    assert progress_line(1_000_000, io.StringIO()) is None
    assert progress_line(10, _Terminal()) is None
    terminal = _Terminal()
    show = progress_line(200_000, terminal)
    show(50_000)
    show(200_000)
    assert terminal.getvalue() == "\rreport:  25% of 200,000 events\rreport: 100% of 200,000 events\n"
