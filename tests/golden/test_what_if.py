"""What-if: the recorded history re-run under other settings, compared with the same history re-run as it was."""

from __future__ import annotations

from pathlib import Path

import pytest
from muster.events import QueueResource, QueueSpec
from muster.replay import load_log
from muster.scheduler.config import AllocatorConfig
from muster.whatif import read_history, what_if

LOG = Path(__file__).parent / "demo-4-nodes-30-jobs.jsonl"


@pytest.fixture(scope="module")
def log():
    return load_log(LOG)


def test_the_same_settings_change_nothing(log):
    report = what_if(log)
    assert report["summary"]["unchanged"] == report["summary"]["jobs"] == 30
    assert all(q["gpu_hours_delta"] == 0 for q in report["queues"].values())


def test_the_history_holds_every_job_with_the_run_time_it_had(log):
    history = read_history(log)
    assert len(history.jobs) == 30 and len(history.nodes) == 4
    assert all(j.duration is not None and j.duration > 0 for j in history.jobs)
    assert history.end > history.start


def test_giving_a_queue_priority_and_quota_shifts_gpu_hours_towards_it(log):
    queues = {q.name: q for q in read_history(log).queues}
    favoured = QueueSpec(
        name="nlp",
        parent="research",
        priority=300,
        resources={"gpu": QueueResource(quota=24, over_quota_weight=8, limit=-1)},
        order=queues["nlp"].order,
    )
    report = what_if(log, queues=[*(q for n, q in queues.items() if n != "nlp"), favoured])
    nlp = report["queues"]["nlp"]
    assert nlp["gpu_hours_after"] > nlp["gpu_hours_before"]
    nlp_jobs = [j for j in report["jobs"].values() if j["queue"] == "nlp" and j["start_delta"] is not None]
    assert nlp_jobs and sum(j["start_delta"] for j in nlp_jobs) <= 0


def test_another_placement_moves_pods_but_keeps_every_job_running(log):
    report = what_if(log, config=AllocatorConfig(placement_gpu="spread"))
    assert report["summary"]["placement_changed"] > 0
    assert report["summary"]["never_started_after"] == 0
