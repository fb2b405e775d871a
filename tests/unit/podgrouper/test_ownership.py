"""A tenant's requests: its own queue, job names no other owner holds, cancels of its own jobs only."""

from __future__ import annotations

from muster.events import (
    CancelRefused,
    CancelRequested,
    PodGroupCreated,
    PodGroupDeleted,
    WorkloadRejected,
    WorkloadSubmitted,
)
from muster.grouping.tenancy import Owners, answer, decide_cancel, decide_submission


def pod(name: str, queue: str | None = None) -> dict:
    labels = {"kai.scheduler/queue": queue} if queue else {}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": labels},
        "spec": {"containers": [{"name": "c"}]},
    }


def submission(*docs: dict, queue: str | None = None) -> WorkloadSubmitted:
    return WorkloadSubmitted(uid="u1", manifests=list(docs), queue=queue)


def owners(*events) -> Owners:
    folded = Owners()
    for event in events:
        folded.apply(event)
    return folded


def held_by(owner: str, name: str = "train") -> Owners:
    return owners(PodGroupCreated(name=name, queue="q", owner=owner))


# -- queues --------------------------------------------------------------------------------------


def test_a_workload_naming_no_queue_goes_to_the_subjects_queue_owned_by_the_tenant():
    [group] = decide_submission(Owners(), "team-a", "qa", submission(pod("train")))
    assert isinstance(group, PodGroupCreated)
    assert (group.name, group.queue, group.owner) == ("train", "qa", "team-a")


def test_a_workload_labelled_with_the_subjects_queue_is_accepted():
    [group] = decide_submission(Owners(), "team-a", "qa", submission(pod("train", queue="qa")))
    assert isinstance(group, PodGroupCreated) and group.queue == "qa"


def test_a_workload_labelled_with_another_queue_is_rejected_naming_the_queue_field():
    [answer] = decide_submission(Owners(), "team-a", "qa", submission(pod("train", queue="qb")))
    assert isinstance(answer, WorkloadRejected)
    assert answer.uid == "u1" and answer.field == "queue" and "'qb'" in answer.error


def test_a_queue_override_other_than_the_subjects_is_rejected():
    [answer] = decide_submission(Owners(), "team-a", "qa", submission(pod("train"), queue="qb"))
    assert isinstance(answer, WorkloadRejected) and answer.field == "queue"


def test_one_group_in_another_queue_rejects_the_whole_workload():
    answers = decide_submission(Owners(), "team-a", "qa", submission(pod("a", "qa"), pod("b", "qb")))
    assert [type(a) for a in answers] == [WorkloadRejected]


def test_a_manifest_the_podgrouper_cannot_group_is_rejected_as_for_anyone():
    [answer] = decide_submission(Owners(), "team-a", "qa", submission({"kind": "Pod"}))
    assert isinstance(answer, WorkloadRejected) and answer.field != "queue"


# -- names ---------------------------------------------------------------------------------------


def test_a_name_held_by_another_tenants_live_job_is_rejected_without_naming_that_tenant():
    [answer] = decide_submission(held_by("team-b"), "team-a", "qa", submission(pod("train")))
    assert isinstance(answer, WorkloadRejected) and answer.field == "metadata.name"
    assert "train" in answer.error and "team-b" not in answer.error


def test_a_name_held_by_the_systems_own_logins_is_rejected_for_a_tenant():
    [answer] = decide_submission(held_by(""), "team-a", "qa", submission(pod("train")))
    assert isinstance(answer, WorkloadRejected)


def test_a_tenant_may_submit_again_under_a_name_it_holds():
    [group] = decide_submission(held_by("team-a"), "team-a", "qa", submission(pod("train")))
    assert isinstance(group, PodGroupCreated) and group.owner == "team-a"


def test_a_deleted_jobs_name_is_free_again():
    freed = owners(PodGroupCreated(name="train", queue="q", owner="team-b"), PodGroupDeleted(name="train"))
    [group] = decide_submission(freed, "team-a", "qa", submission(pod("train")))
    assert isinstance(group, PodGroupCreated) and group.owner == "team-a"


def test_folding_a_stretch_of_the_log_twice_changes_nothing():
    log = [
        PodGroupCreated(name="x", queue="q", owner="team-a"),
        PodGroupDeleted(name="x"),
        PodGroupCreated(name="x", queue="q", owner="team-b"),
    ]
    once, twice = owners(*log), owners(*log, *log[1:])
    assert once.of("x") == twice.of("x") == "team-b"


# -- cancels -------------------------------------------------------------------------------------


def cancel(job: str = "train") -> CancelRequested:
    return CancelRequested(uid="c1", job=job)


def test_a_tenant_cancels_its_own_job():
    assert decide_cancel(held_by("team-a"), "team-a", cancel()) == [PodGroupDeleted(name="train")]


def test_a_tenant_may_not_cancel_another_tenants_job():
    [answer] = decide_cancel(held_by("team-b"), "team-a", cancel())
    assert isinstance(answer, CancelRefused) and (answer.uid, answer.job) == ("c1", "train")


def test_a_tenant_may_not_cancel_a_job_of_the_systems_own_logins():
    [answer] = decide_cancel(held_by(""), "team-a", cancel())
    assert isinstance(answer, CancelRefused)


def test_a_refusal_reads_the_same_whether_or_not_the_job_exists():
    [other] = decide_cancel(held_by("team-b"), "team-a", cancel())
    [missing] = decide_cancel(Owners(), "team-a", cancel())
    assert other == missing


# -- answers -------------------------------------------------------------------------------------


def test_a_submission_is_answered_with_the_jobs_it_made_and_no_manifest():
    request = submission(pod("train"))
    answered = answer(request, decide_submission(Owners(), "team-a", "qa", request))
    assert (answered.request, answered.uid, answered.jobs, answered.error) == (
        "WorkloadSubmitted", "u1", ["train"], ""
    )  # fmt: skip


def test_a_rejected_submission_is_answered_with_the_reason_and_field():
    request = submission(pod("train", queue="qb"))
    answered = answer(request, decide_submission(Owners(), "team-a", "qa", request))
    assert (answered.jobs, answered.field) == ([], "queue")
    assert "'qb'" in answered.error


def test_a_cancel_is_answered_with_the_job_it_deleted():
    request = CancelRequested(uid="c1", job="train")
    answered = answer(request, decide_cancel(held_by("team-a"), "team-a", request))
    assert (answered.request, answered.uid, answered.jobs, answered.error) == (
        "CancelRequested",
        "c1",
        ["train"],
        "",
    )


def test_a_refused_cancel_is_answered_as_refused_without_naming_the_owner():
    request = CancelRequested(uid="c1", job="train")
    answered = answer(request, decide_cancel(held_by("team-b"), "team-a", request))
    assert answered.jobs == [] and answered.error == "tenant team-a has no job train"
