"""A node's fact that contradicts what the log says of its pod is refused by the fold, unapplied (#25).

Each forged fact here decodes and passes bus admission; folded, it would have put a pod on devices
the node does not have, or let one node speak for another's pod.
"""

from __future__ import annotations

from muster import events as ev
from muster.scheduler.config import AllocatorConfig
from muster.scheduler.engine import Allocator
from muster.scheduler.fold import AllocatorFold

from .builders import allocator, gang_job, gpu_nodes, queue, run


def waiting_job() -> Allocator:
    """Two 4-GPU nodes and a one-pod, 2-GPU job that has not been placed."""
    return allocator(gpu_nodes(2, gpus=4), queue("q", gpu_quota=8), gang_job("q", gpu=2, name="j"))


def running_job() -> Allocator:
    a = waiting_job()
    run(a)
    assert a.state.jobs["j"].status == "running"
    return a


def placed_on(a: Allocator) -> tuple[str, tuple[int, ...]]:
    job = a.state.jobs["j"]
    return a.state.node_table.name_of(job.node[0]), job.gpus[0]


def test_a_bind_onto_a_device_the_node_does_not_have_is_refused_and_leaves_the_pod_waiting():
    a = waiting_job()
    reason = a.apply(ev.PodBound(job="j", pod=0, node="node-0", gpus=[3, 9]))
    assert reason == "pod j/0: device 9 is past the last of node node-0's 4 GPUs"
    assert a.state.jobs["j"].status == "pending"
    run(a)  # and the allocator goes on deciding
    assert a.state.jobs["j"].status == "running"


def test_a_bind_on_a_node_that_is_not_registered_is_refused():
    a = waiting_job()
    assert (
        a.apply(ev.PodBound(job="j", pod=0, node="ghost", gpus=[0, 1]))
        == "pod j/0: node ghost is not registered"
    )
    assert a.state.jobs["j"].status == "pending"


def test_a_bind_naming_one_device_twice_or_too_few_devices_is_refused():
    a = waiting_job()
    assert "name one device twice" in a.apply(ev.PodBound(job="j", pod=0, node="node-0", gpus=[1, 1]))
    assert a.apply(ev.PodBound(job="j", pod=0, node="node-0", gpus=[1])) == "pod j/0 needs 2 device(s), not 1"


def test_another_node_cannot_report_a_running_pod_completed():
    a = running_job()
    node, _ = placed_on(a)
    other = "node-1" if node == "node-0" else "node-0"
    reason = a.apply(ev.PodCompleted(job="j", pod=0, node=other))
    assert reason == f"pod j/0 was placed on node {node}, not {other}"
    assert a.state.jobs["j"].status == "running"
    assert a.apply(ev.PodCompleted(job="j", pod=0, node=node)) is None
    assert a.state.jobs["j"].status == "completed"


def test_another_node_cannot_confirm_a_bind_or_change_its_devices():
    a = waiting_job()
    out = a.cycle(1.0, cycle=1)
    a.apply(out.completed)
    [bind] = [d for d in out.decisions if isinstance(d, ev.BindRequested)]
    a.apply(bind)
    other = "node-1" if bind.node == "node-0" else "node-0"
    assert a.apply(ev.PodBound(job="j", pod=0, node=other, gpus=bind.gpus)) is not None
    moved = [g for g in range(4) if g not in bind.gpus][:2]
    assert "was given devices" in a.apply(ev.PodBound(job="j", pod=0, node=bind.node, gpus=moved))
    assert a.apply(ev.PodBound(job="j", pod=0, node=bind.node, gpus=bind.gpus)) is None
    assert a.state.jobs["j"].status == "running"


def test_the_fold_names_the_message_a_refused_fact_came_in():
    fold = AllocatorFold(Allocator(AllocatorConfig()), "default")
    for seq, event in enumerate([*gpu_nodes(1, gpus=4), queue("q", gpu_quota=8), gang_job("q", name="j")], 1):
        fold.fold(seq, [event])
    fold.fold(9, [ev.PodBound(job="j", pod=0, node="node-0", gpus=[7])])
    assert fold.refusals == [
        (9, "PodBound refused: pod j/0: device 7 is past the last of node node-0's 4 GPUs")
    ]
    assert fold.watermark == 9
