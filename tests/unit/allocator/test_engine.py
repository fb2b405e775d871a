import msgspec
import pytest
from muster import events as ev
from muster.scheduler.config import AllocatorConfig

from .builders import allocator, gang_job, gpu_nodes, queue, run


def cluster():
    return [
        gpu_nodes(2, gpus=4),
        queue("a", gpu_quota=2),
        queue("b", gpu_quota=2),
        *[gang_job("a", 2, name=f"a{i}", submitted_at=i) for i in range(3)],
        *[gang_job("b", 1, name=f"b{i}", submitted_at=i) for i in range(5)],
    ]


def test_a_cycle_does_not_change_state():
    a = allocator(*cluster())
    first = a.cycle(0.0, cycle=1)
    second = a.cycle(0.0, cycle=1)
    assert msgspec.json.encode(first) == msgspec.json.encode(second)


def test_replaying_the_log_gives_the_same_decisions_byte_for_byte():
    log: list = [e for x in cluster() for e in (x if isinstance(x, list) else [x])]
    a = allocator(*log)
    outs = []
    for c in range(1, 4):
        out = a.cycle(float(c), cycle=c)
        outs.append(msgspec.json.encode(out))
        for e in [*out.decisions, out.completed]:
            a.apply(e)
            log.append(e)
    b = allocator(*log[: len(log)])
    replayed = allocator(*[e for e in log if not isinstance(e, ev.BindRequested | ev.CycleCompleted)])
    for c in range(1, 4):
        out = replayed.cycle(float(c), cycle=c)
        assert msgspec.json.encode(out) == outs[c - 1]
        for e in [*out.decisions, out.completed]:
            replayed.apply(e)
    assert b.snapshot() == a.snapshot()


def test_applying_an_event_twice_changes_nothing():
    a = allocator(*cluster())
    out = a.cycle(0.0, cycle=1)
    for d in out.decisions:
        a.apply(d)
        a.apply(ev.PodBound(job=d.job, pod=d.pod, node=d.node, gpus=d.gpus, at=1.0))
    once = a.snapshot()
    for d in out.decisions:
        a.apply(d)
        a.apply(ev.PodBound(job=d.job, pod=d.pod, node=d.node, gpus=d.gpus, at=1.0))
    assert a.snapshot() == once


def test_cycle_completed_carries_only_reasons_that_changed():
    a = allocator(gpu_nodes(1, gpus=1), queue("a", gpu_quota=1), gang_job("a", 2, name="big"))
    first = a.cycle(0.0, cycle=1)
    assert set(first.completed.pending) == {"big"}
    a.apply(first.completed)
    second = a.cycle(1.0, cycle=2)
    assert second.completed.pending == {}
    assert second.reasons == first.reasons
    a.apply(ev.PodGroupDeleted(name="big"))
    assert a.cycle(2.0, cycle=3).completed.pending == {"big": ""}


def test_decisions_are_stamped_with_cycle_epoch_and_pool():
    a = allocator(gpu_nodes(1, pool="p1"), queue("a", gpu_quota=1), gang_job("a", 1, name="j", pool="p1"))
    d = a.cycle(0.0, cycle=7, epoch=3, watermark=42).decisions[0]
    assert (d.cycle, d.epoch, d.pool) == (7, 3, "p1")


def test_an_allocator_ignores_pools_it_does_not_serve():
    from muster.scheduler.engine import Allocator

    a = Allocator(AllocatorConfig(), pools=frozenset({"p1"}))
    for e in [*gpu_nodes(1, pool="p2"), queue("a", gpu_quota=1), gang_job("a", 1, name="j", pool="p2")]:
        a.apply(e)
    assert a.snapshot().nodes == {} and a.snapshot().jobs == {}


def test_queue_status_reports_fair_share_allocated_and_requested_in_base_units():
    a = allocator(gpu_nodes(1, gpus=4, cpu=8), queue("a", gpu_quota=1), gang_job("a", 2, cpu=2, name="j"))
    run(a)
    status = {q.name: q for q in a.cycle(9.0, cycle=9).queue_status}["a"]
    assert status.allocated == {"gpu": 2.0, "cpu": 4000.0, "memory": 2.0 * 2**30}
    assert status.fair_share["gpu"] == 2.0
    assert a.snapshot().queues["a"].allocated["cpu"] == 4.0  # cores in the snapshot


def test_job_completes_when_every_pod_completes():
    a = allocator(gpu_nodes(1), queue("a", gpu_quota=2), gang_job("a", 2, name="j"))
    run(a)
    a.apply(ev.PodCompleted(job="j", pod=0, node="node-0"))
    assert a.snapshot().jobs["j"].status == "running"
    a.apply(ev.PodCompleted(job="j", pod=1, node="node-0"))
    assert a.snapshot().jobs["j"].status == "completed"
    assert a.snapshot().nodes["node-0"].free["gpu"] == 8


def test_an_idle_cycle_repeats_its_answer_without_deciding():
    a = allocator(gpu_nodes(1, gpus=1), queue("a", gpu_quota=1), gang_job("a", 2, name="big"))
    first = a.cycle(0.0, cycle=1)
    again = a.cycle(1.0, cycle=2)
    assert again.decisions == [] and again.reasons == first.reasons


@pytest.mark.parametrize(
    ("kw", "field"),
    [
        ({"placement_gpu": "tight"}, "placement_gpu"),
        ({"actions": ("allocate", "dance")}, "actions[1]"),
        ({"reclaimer_utilization_multiplier": 0.5}, "reclaimer_utilization_multiplier"),
    ],
)
def test_invalid_config_names_the_field(kw, field):
    with pytest.raises(ValueError, match=field.replace("[", r"\[")):
        AllocatorConfig(**kw)


def test_config_digest_is_stable_and_changes_with_settings():
    assert AllocatorConfig().digest() == AllocatorConfig().digest()
    assert AllocatorConfig().digest() != AllocatorConfig(placement_gpu="spread").digest()
