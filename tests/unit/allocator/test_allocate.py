from muster import events as ev
from muster.scheduler.config import AllocatorConfig

from .builders import GI, allocator, confirm, gang_job, gpu_nodes, node, queue, run


def binds(out):
    return [(d.job, d.pod, d.node) for d in out.decisions if isinstance(d, ev.BindRequested)]


def test_a_gang_is_bound_whole_or_not_at_all():
    a = allocator(
        gpu_nodes(2, gpus=2),
        queue("a", gpu_quota=4),
        gang_job("a", pods=5, name="big"),
        gang_job("a", pods=4, name="fits", submitted_at=1),
    )
    out = a.cycle(0.0, cycle=1)
    assert {j for j, _, _ in binds(out)} == {"fits"}
    assert "gang of 5 pods does not fit" in out.reasons["big"]


def test_elastic_job_grows_one_pod_at_a_time_beyond_min_available():
    a = allocator(
        gpu_nodes(1, gpus=3), queue("a", gpu_quota=4), gang_job("a", pods=5, min_available=2, name="e")
    )
    out = a.cycle(0.0, cycle=1)
    assert len(binds(out)) == 3  # the gang of 2, then one more while room lasts
    assert a.snapshot().jobs["e"].status == "pending"  # a cycle changes nothing by itself


def test_queue_under_its_deserved_quota_goes_first():
    a = allocator(
        gpu_nodes(1, gpus=2),
        queue("rich", gpu_quota=0),
        queue("poor", gpu_quota=2),
        gang_job("rich", 2, name="r"),
        gang_job("poor", 2, name="p", submitted_at=5),
    )
    assert {j for j, _, _ in binds(a.cycle(0.0, cycle=1))} == {"p"}


def test_limit_of_an_ancestor_blocks_the_job_with_a_reason_naming_it():
    a = allocator(
        gpu_nodes(1, gpus=8),
        queue("dept", gpu_quota=4, gpu_limit=2),
        queue("team", gpu_quota=4, parent="dept"),
        gang_job("team", 3, name="j"),
    )
    out = a.cycle(0.0, cycle=1)
    assert binds(out) == []
    assert out.reasons["j"].startswith("queue dept is at its limit of 2 gpu")


def test_non_preemptible_job_only_uses_in_quota_resources():
    a = allocator(
        gpu_nodes(1, gpus=8),
        queue("a", gpu_quota=2),
        gang_job("a", 3, name="np", priority=125),
        gang_job("a", 3, name="p", priority=50),
    )
    out = a.cycle(0.0, cycle=1)
    assert {j for j, _, _ in binds(out)} == {"p"}
    assert "not preemptible" in out.reasons["np"]


def test_node_selector_restricts_nodes_and_explains_when_nothing_matches():
    a = allocator(
        gpu_nodes(1, gpus=8, prefix="plain"),
        gpu_nodes(1, gpus=8, prefix="fast", labels={"zone": "a"}),
        queue("a", gpu_quota=8),
        gang_job("a", 1, name="sel", node_selector={"zone": "a"}),
        gang_job("a", 1, name="none", node_selector={"zone": "z"}),
    )
    out = a.cycle(0.0, cycle=1)
    assert binds(out) == [("sel", 0, "fast-0")]
    assert "matches its node_selector zone=z" in out.reasons["none"]


def test_unschedulable_nodes_are_not_used():
    a = allocator(
        gpu_nodes(1, gpus=8, unschedulable=True), queue("a", gpu_quota=8), gang_job("a", 1, name="j")
    )
    assert binds(a.cycle(0.0, cycle=1)) == []


def test_binpack_and_spread_choose_differently():
    events = [node("n-a"), node("n-b"), queue("a", gpu_quota=8), gang_job("a", 2, min_available=1, name="j")]
    packed = allocator(*events, placement_gpu="binpack")
    spread = allocator(*events, placement_gpu="spread")
    run(packed)
    run(spread)
    assert [p.node for p in packed.snapshot().jobs["j"].pods] == ["n-a", "n-a"]
    assert sorted(p.node for p in spread.snapshot().jobs["j"].pods) == ["n-a", "n-b"]


def test_fractional_pods_share_one_device():
    a = allocator(
        gpu_nodes(1, gpus=2),
        queue("a", gpu_quota=2),
        gang_job("a", 1, gpu=0.5, name="f1"),
        gang_job("a", 1, gpu=0.5, name="f2", submitted_at=1),
        gang_job("a", 1, gpu=0, gpu_memory=40 * GI, name="m", submitted_at=2),
    )
    out = a.cycle(0.0, cycle=1)
    devices = {d.job: (d.gpus, d.gpu_share) for d in out.decisions}
    assert devices["f1"][0] == devices["f2"][0]
    assert devices["m"][1] == 0.5 and devices["m"][0] != devices["f1"][0]


def test_allocated_counts_gpu_memory_pods_by_device_memory_rounded_up():
    a = allocator(
        gpu_nodes(1, gpus=1, gpu_memory=30 * GI),
        queue("a", gpu_quota=1),
        gang_job("a", 1, gpu=0, gpu_memory=10 * GI, name="m"),
    )
    run(a)
    assert a.snapshot().queues["a"].allocated["gpu"] == 0.34


def test_pipelined_when_only_releasing_resources_fit():
    a = allocator(gpu_nodes(1, gpus=1), queue("a", gpu_quota=1), gang_job("a", 1, name="old"))
    run(a)
    a.apply(ev.EvictionRequested(job="old", pod=0, node="node-0"))
    a.apply(gang_job("a", 1, name="new", submitted_at=3))
    out = a.cycle(5.0, cycle=9)
    assert [(d.job, d.pipelined) for d in out.decisions] == [("new", True)]


def test_unknown_queue_is_a_pending_reason():
    a = allocator(gpu_nodes(1), gang_job("ghost", 1, name="j"))
    assert a.cycle(0.0, cycle=1).reasons["j"] == "queue ghost does not exist"


def test_spread_disables_consolidation_and_unimplemented_actions_are_skipped():
    cfg = AllocatorConfig(placement_gpu="spread")
    a = allocator(gpu_nodes(1), queue("a", gpu_quota=1), gang_job("a", 1, name="j"), config=cfg)
    assert len(binds(a.cycle(0.0, cycle=1))) == 1


def test_topology_required_keeps_the_gang_in_one_domain():
    a = allocator(
        gpu_nodes(2, gpus=2, prefix="r1", labels={"rack": "r1"}),
        gpu_nodes(1, gpus=2, prefix="r2", labels={"rack": "r2"}),
        gpu_nodes(1, gpus=8, prefix="bare"),
        queue("a", gpu_quota=8),
        gang_job("a", 4, name="t", topology=ev.Topology(required="rack")),
    )
    out = a.cycle(0.0, cycle=1)
    assert sorted(n for _, _, n in binds(out)) == ["r1-0", "r1-0", "r1-1", "r1-1"]


def test_confirmed_binds_make_the_job_running_and_evictions_preempted():
    a = allocator(gpu_nodes(1), queue("a", gpu_quota=1), gang_job("a", 1, name="j"))
    run(a)
    assert a.snapshot().jobs["j"].status == "running"
    confirm(a, [ev.EvictionRequested(job="j", pod=0, node="node-0")])
    assert a.snapshot().jobs["j"].status == "preempted"
