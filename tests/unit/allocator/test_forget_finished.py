"""An allocator that forgets finished jobs decides exactly as one that keeps them, with a state that does not grow."""

from __future__ import annotations

from pathlib import Path

from muster import events as ev
from muster.replay import load_log
from muster.scheduler.config import AllocatorConfig
from muster.scheduler.engine import Allocator
from muster.scheduler.fold import AllocatorFold, consumed_subjects
from muster.subjects import Subjects, subject_matches

from services.allocator.app import load_config
from tests.unit.allocator.builders import gang_job, gpu_nodes, queue

GOLDEN = Path(__file__).parents[2] / "golden" / "demo-4-nodes-30-jobs.jsonl"


def new_fold(forget: bool) -> AllocatorFold:
    return AllocatorFold(
        Allocator(AllocatorConfig(forget_finished=forget), frozenset({"default"})), "default"
    )


def test_forgetting_finished_jobs_changes_no_decision_of_a_recorded_history():
    wanted = consumed_subjects(Subjects("muster"), "default")
    keeping, forgetting = new_fold(False), new_fold(True)
    for m in load_log(GOLDEN):
        if not any(subject_matches(p, m.subject) for p in wanted):
            continue
        keeping.fold(m.seq, m.events)
        forgetting.fold(m.seq, m.events)
        a = keeping.cycle(float(m.seq), epoch=1)
        b = forgetting.cycle(float(m.seq), epoch=1)
        assert (a.decisions, a.completed.pending, a.queue_status) == (
            b.decisions,
            b.completed.pending,
            b.queue_status,
        )
    assert len(forgetting.engine.state.jobs) < len(keeping.engine.state.jobs)
    assert forgetting.engine.state.ledger.finished


def finished_job(fold: AllocatorFold) -> None:
    fold.fold(1, [*gpu_nodes(1, gpus=8), queue("team", gpu_quota=8)])
    fold.fold(2, [gang_job("team", pods=1, gpu=1, name="train")])
    fold.fold(3, [ev.BindRequested(job="train", pod=0, node="node-0", gpus=[0], epoch=1)])
    fold.fold(4, [ev.PodBound(job="train", pod=0, node="node-0", gpus=[0], at=1.0)])
    fold.fold(5, [ev.PodCompleted(job="train", pod=0, node="node-0", at=2.0)])


def test_a_finished_job_is_forgotten_but_its_name_is_not_scheduled_again():
    fold = new_fold(True)
    finished_job(fold)
    assert "train" not in fold.engine.state.jobs and "train" in fold.engine.state.ledger.finished
    fold.fold(6, [gang_job("team", pods=1, gpu=1, name="train")])
    assert fold.cycle(3.0, epoch=1).decisions == []


def test_without_forgetting_a_finished_job_stays_in_the_state():
    fold = new_fold(False)
    finished_job(fold)
    assert fold.engine.state.jobs["train"].status == "completed"


def test_the_allocator_service_forgets_finished_jobs_unless_its_settings_say_otherwise(tmp_path):
    assert load_config({}).forget_finished
    settings = tmp_path / "allocator.yaml"
    settings.write_text("forget_finished: false\n")
    assert not load_config({"MUSTER_ALLOCATOR_CONFIG": str(settings)}).forget_finished


def test_a_configuration_recorded_before_forgetting_existed_keeps_its_digest():
    # The golden history's cycles carry the digest of the default configuration as it was recorded.
    recorded = next(
        e.config_digest for m in load_log(GOLDEN) for e in m.events if isinstance(e, ev.CycleCompleted)
    )
    assert AllocatorConfig().digest() == recorded
    assert AllocatorConfig(forget_finished=True).digest() != recorded
