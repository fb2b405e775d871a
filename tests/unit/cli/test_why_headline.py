"""The lines `muster why` prints above a job's timeline."""

from __future__ import annotations

from muster.cli.why_cmd import headline, reason_of

FAILURE = {"pod": 0, "node": "gpu-a", "exit_code": 3, "reason": "CUDA out of memory"}


def job(status: str, reason: str | None = None, failures: list | None = None) -> dict:
    return {"name": "train", "queue": "team", "status": status, "reason": reason, "failures": failures or []}


def test_a_failed_job_says_it_failed_and_how():
    lines = headline(job("failed", reason="queue team is at its limit", failures=[FAILURE]))
    assert lines[0] == "[bold]train[/] in queue team: [bold]failed[/]"
    assert lines[1:] == ["  failed because: pod 0 failed on gpu-a with exit code 3: CUDA out of memory"]


def test_a_failed_jobs_reason_is_how_it_failed_not_what_it_last_waited_for():
    assert reason_of(job("failed", reason="no room", failures=[FAILURE])).startswith("pod 0 failed on gpu-a")


def test_a_job_waiting_to_run_its_other_pods_says_why_it_waits_and_notes_the_failure():
    lines = headline(job("preempted", reason="no node has 1 free gpu", failures=[FAILURE]))
    assert lines[1:] == [
        "  now waiting because: no node has 1 free gpu",
        "  note: pod 0 failed on gpu-a with exit code 3: CUDA out of memory",
    ]


def test_a_running_job_has_no_reason_and_nothing_to_note_without_failures():
    assert headline(job("running", reason="stale")) == ["[bold]train[/] in queue team: [bold]running[/]"]
    assert reason_of(job("running", reason="stale")) is None


def test_a_nodes_words_are_not_read_as_markup():
    lines = headline(job("failed", failures=[{**FAILURE, "reason": "[red]boom"}]))
    assert lines[1].endswith("\\[red]boom")
