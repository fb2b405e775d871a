"""The fault suite's invariants, each shown holding on a sound log and caught on a log that breaks it."""

from __future__ import annotations

from muster import events as ev
from muster.chaos.checks import check_log, double_binds, job_outcomes, over_capacity, unsettled_jobs
from muster.replay import LoggedMessage


def log(*batches: list[ev.Event]) -> list[LoggedMessage]:
    """One message per batch, numbered from 1, subject irrelevant to the checks."""
    return [LoggedMessage(seq, "t.any", list(batch)) for seq, batch in enumerate(batches, start=1)]


NODE = ev.NodeRegistered(
    node=ev.NodeSpec(name="n1", resources=ev.Resources(gpu=2, cpu=8000, memory=64 * 2**30))
)


def job(name: str, pods: int = 1, gpu: float = 1.0, cpu: int = 1000) -> ev.PodGroupCreated:
    return ev.PodGroupCreated(
        name=name,
        queue="q",
        min_available=pods,
        pods=[ev.PodSpec(count=pods, resources=ev.Resources(gpu=gpu, cpu=cpu))],
    )


def bound(job: str, pod: int = 0, gpus=(0,), share: float = 0.0, node: str = "n1") -> ev.PodBound:
    return ev.PodBound(job=job, pod=pod, node=node, gpus=list(gpus), gpu_share=share)


def cycle(**pending: str) -> ev.CycleCompleted:
    return ev.CycleCompleted(cycle=1, watermark=0, clock=0.0, pending=pending)


# -- no pod bound twice ------------------------------------------------------------


def test_a_pod_bound_while_bound_is_a_double_bind():
    violations = double_binds(log([NODE, job("a")], [bound("a")], [bound("a", gpus=(1,))]))
    assert [(v.check, v.seq) for v in violations] == [("double_bind", 3)]
    assert "a[0]" in violations[0].message


def test_a_pod_bound_again_after_eviction_or_a_failed_bind_is_fine():
    sound = log(
        [NODE, job("a")],
        [ev.BindFailed(job="a", pod=0, node="n1", reason="device in use")],
        [bound("a")],
        [ev.PodEvicted(job="a", pod=0, node="n1")],
        [bound("a", gpus=(1,))],
    )
    assert double_binds(sound) == []


def test_a_refused_repeat_bind_leaves_the_pod_bound():
    broken = log(
        [NODE, job("a")],
        [bound("a")],
        [ev.BindFailed(job="a", pod=0, node="n1", reason="pod is already bound")],
        [bound("a")],
    )
    assert [v.seq for v in double_binds(broken)] == [4]


def test_a_pod_bound_after_it_completed_is_a_double_bind():
    broken = log([NODE, job("a")], [bound("a")], [ev.PodCompleted(job="a", pod=0, node="n1")], [bound("a")])
    assert [v.seq for v in double_binds(broken)] == [4]


# -- no device over capacity -------------------------------------------------------


def test_two_whole_pods_on_one_device_are_over_capacity():
    broken = log([NODE, job("a"), job("b")], [bound("a")], [bound("b")])
    violations = over_capacity(broken)
    assert [(v.check, v.seq) for v in violations] == [("over_capacity", 3)]
    assert "device 0 of n1" in violations[0].message


def test_a_device_freed_by_completion_or_eviction_can_be_taken_again():
    sound = log(
        [NODE, job("a"), job("b"), job("c")],
        [bound("a")],
        [ev.PodCompleted(job="a", pod=0, node="n1")],
        [bound("b")],
        [ev.PodEvicted(job="b", pod=0, node="n1")],
        [bound("c")],
    )
    assert over_capacity(sound) == []


def test_fractional_shares_may_fill_a_device_but_not_overflow_it():
    jobs = [job("a", gpu=0.5), job("b", gpu=0.5), job("c", gpu=0.25)]
    full = log([NODE, *jobs[:2]], [bound("a", share=0.5)], [bound("b", share=0.5)])
    assert over_capacity(full) == []
    overflow = log([NODE, *jobs], [bound("a", share=0.5)], [bound("b", share=0.5)], [bound("c", share=0.25)])
    assert [v.seq for v in over_capacity(overflow)] == [4]


def test_a_whole_pod_on_a_shared_device_is_over_capacity():
    broken = log([NODE, job("a", gpu=0.5), job("b")], [bound("a", share=0.5)], [bound("b")])
    assert [v.seq for v in over_capacity(broken)] == [3]


def test_a_device_the_node_does_not_have_is_over_capacity():
    broken = log([NODE, job("a")], [bound("a", gpus=(2,))])
    assert "has 2" in over_capacity(broken)[0].message


def test_cpu_beyond_the_node_is_over_capacity():
    broken = log([NODE, job("a", cpu=5000), job("b", cpu=5000)], [bound("a")], [bound("b", gpus=(1,))])
    assert [v.message.split(":")[1].strip().split()[0] for v in over_capacity(broken)] == ["cpu"]


def test_a_bind_to_an_unknown_node_is_reported():
    assert "unknown node" in over_capacity(log([job("a")], [bound("a", node="ghost")]))[0].message


# -- every job settled ----------------------------------------------------------------


def test_a_pending_job_without_a_reason_is_unsettled():
    violations = unsettled_jobs(log([NODE, job("a"), job("b")], [cycle(b="queue q is at its limit")]))
    assert [v.message for v in violations] == ["job a is pending with no reason recorded"]


def test_a_reason_recorded_in_a_part_of_a_cycle_counts():
    part = ev.PendingReasons(cycle=1, clock=0.0, reasons={"a": "queue q is at its limit"})
    assert unsettled_jobs(log([NODE, job("a")], [part, cycle()])) == []


def test_a_reason_cleared_by_the_allocator_no_longer_counts():
    cleared = log([NODE, job("a")], [cycle(a="no node fits")], [cycle(a="")])
    assert len(unsettled_jobs(cleared)) == 1


def test_running_completed_and_preempted_with_reason_are_settled():
    sound = log(
        [NODE, job("run"), job("done"), job("back", pods=1)],
        [bound("run"), bound("done", gpus=(1,))],
        [ev.PodCompleted(job="done", pod=0, node="n1")],
        [bound("back", gpus=(1,))],
        [ev.PodEvicted(job="back", pod=0, node="n1")],
        [cycle(back="waiting for room")],
    )
    assert unsettled_jobs(sound) == []
    assert {k: v[0] for k, v in job_outcomes(sound).items()} == {
        "back": "pending",
        "done": "completed",
        "run": "running",
    }


def test_the_report_counts_what_happened_and_gathers_every_violation():
    broken = log(
        [NODE, job("a"), job("b")],
        [bound("a")],
        [bound("b")],
        [ev.PodCompleted(job="a", pod=0, node="n1")],
    )
    report = check_log(broken)
    assert (report.jobs, report.binds, report.completions) == (2, 2, 1)
    assert report.outcomes == {"completed": 1, "running": 1}
    assert [v.check for v in report.violations] == ["over_capacity"]
    assert report.counts()["violations"] == 1


def test_a_job_failed_only_once_every_pod_has_ended_as_the_projection_says():
    ended = log(
        [NODE, job("gang", pods=2), job("half", pods=2)],
        [bound("gang", 0), bound("gang", 1, gpus=(1,))],
        [
            ev.PodFailed(job="gang", pod=0, node="n1", exit_code=1),
            ev.PodCompleted(job="gang", pod=1, node="n1"),
        ],
        [bound("half", 0)],
        [ev.PodFailed(job="half", pod=0, node="n1", exit_code=1)],
    )
    outcomes = {k: v[0] for k, v in job_outcomes(ended).items()}
    assert outcomes == {"gang": "failed", "half": "pending"}
    # The pod still to place waits like any other: without the allocator's reason it is unsettled.
    assert [v.message for v in unsettled_jobs(ended)] == ["job half is pending with no reason recorded"]
