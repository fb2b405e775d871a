"""Each section of the cluster state on its own: what it keeps, and that its image restores it."""

from __future__ import annotations

import msgspec
import pytest
from muster import events as ev
from muster.kernels import placement as pl
from muster.scheduler.state import SECTIONS, ClusterState, pod_req
from muster.scheduler.state.adoptions import Adoptions
from muster.scheduler.state.nodes import NodeTable
from muster.usage_window import UsageWindow

from .builders import GI, gang_job, gpu_nodes, node, queue


def _bound(job: str, pod: int, gpus: list[int], at: float) -> list[ev.Event]:
    return [
        ev.BindRequested(job=job, pod=pod, node="node-0", gpus=gpus),
        ev.PodBound(job=job, pod=pod, node="node-0", gpus=gpus, at=at),
    ]


BUSY = [
    *gpu_nodes(2, gpus=4),
    node("spare", gpus=2),
    ev.NodeRemoved(name="spare"),
    queue("team", gpu_quota=4),
    gang_job("team", 2, name="train"),
    gang_job("team", 1, gpu=0.5, name="notebook", preemptible=True),
    gang_job("team", 1, name="waiting"),
    gang_job("team", 2, name="handed-over"),
    *_bound("train", 0, [0], 10.0),
    *_bound("train", 1, [1], 10.0),
    *_bound("notebook", 0, [2], 20.0),
    ev.PodCompleted(job="train", pod=1, node="node-0", at=50.0),
    ev.EvictionRequested(job="notebook", pod=0, node="node-0"),
    ev.BindRequested(job="notebook", pod=0, node="node-1", gpus=[0], gpu_share=0.5, pipelined=True),
    ev.AdoptPods(pods=[ev.AdoptedPod(job="handed-over", pod=1, node="node-1", gpus=[1])]),
    ev.AdoptPods(pods=[ev.AdoptedPod(job="later", pod=0, node="node-1", gpus=[2])]),
    ev.CycleCompleted(cycle=1, watermark=0, clock=60.0, pending={"waiting": "no room"}),
]
"""Events that leave something in every section: nodes (one removed), running, releasing, finished and
pending pods, usage history, a move under way, pods awaiting adoption."""


def busy_state() -> ClusterState:
    state = ClusterState(usage_window=UsageWindow(size=3600.0))
    for e in BUSY:
        state.apply(e)
    return state


def _bytes(image: msgspec.Struct) -> bytes:
    return msgspec.msgpack.encode(image)


def _decoded(image: msgspec.Struct) -> msgspec.Struct:
    """The image as a snapshot gives it back (typed: a count the events held as int is a float there)."""
    return msgspec.msgpack.decode(_bytes(image), type=type(image))


@pytest.mark.parametrize("name", sorted(SECTIONS))
def test_a_section_restored_from_its_image_images_the_same_bytes(name):
    section = getattr(busy_state(), name)
    decoded = _decoded(section.image())
    assert _bytes(SECTIONS[name].restore(decoded).image()) == _bytes(decoded)


def test_a_state_restored_from_its_image_applies_the_next_events_as_the_original_does():
    original, restored = busy_state(), ClusterState.restore(busy_state().image())
    for state in (original, restored):
        state.apply(ev.PodEvicted(job="notebook", pod=0, node="node-0"))
        state.apply(ev.PodBound(job="notebook", pod=0, node="node-1", gpus=[0], gpu_share=0.5, at=70.0))
    assert [_decoded(part) for part in restored.image()] == [_decoded(part) for part in original.image()]
    assert restored.jobs["notebook"].node[0] == original.node_table.nodes["node-1"].slot


def test_the_busy_state_has_something_in_every_section():
    # What the round trips above are worth: no section images only its empty defaults.
    state = busy_state()
    for name in SECTIONS:
        assert _bytes(getattr(state, name).image()) != _bytes(SECTIONS[name]().image()), name


# -- nodes ----------------------------------------------------------------------------------------


def test_a_removed_node_frees_its_slot_for_the_next_node_and_its_ranks_follow_names():
    table = NodeTable()
    for e in gpu_nodes(3, gpus=2):
        table.set(e.node)
    freed = table.remove("node-1")
    table.set(node("a-first").node)
    table.rerank()
    assert table.nodes["a-first"].slot == freed
    ranks = {name: int(table.arrays.ints[n.slot, pl.N_RANK]) for name, n in table.nodes.items()}
    assert ranks == {"a-first": 0, "node-0": 1, "node-2": 2}


def test_a_node_of_more_gpus_than_any_before_widens_the_arrays_and_keeps_what_they_held():
    table = NodeTable()
    table.set(gpu_nodes(1, gpus=2)[0].node)
    table.arrays.dev[pl.D_USED, 0, 1] = 1.0
    table.set(node("big", gpus=8).node)
    assert table.arrays.dev.shape[2] == 8
    assert table.arrays.dev[pl.D_USED, 0, 1] == 1.0


def test_the_nodes_a_pod_may_use_are_those_of_its_pool_schedulable_and_matching_its_selector():
    table = NodeTable()
    for e in [
        *gpu_nodes(1, prefix="a", labels={"zone": "x"}),
        *gpu_nodes(1, prefix="b", labels={"zone": "y"}),
        *gpu_nodes(1, prefix="c", labels={"zone": "x"}, unschedulable=True),
        *gpu_nodes(1, prefix="d", labels={"zone": "x"}, pool="other"),
    ]:
        table.set(e.node)
    spec = ev.PodSpec(node_selector={"zone": "x"}, resources=ev.Resources(gpu=1))
    mask = table.eligible("default", pod_req(spec, "pods[0]").spec_key)
    assert [name for name, n in sorted(table.nodes.items()) if mask[n.slot]] == ["a-0"]


def test_what_the_nodes_offer_follows_a_node_updated_or_removed_after_a_cycle_asked():
    table = NodeTable()
    for e in gpu_nodes(2, gpus=4, labels={"zone": "x"}):
        table.set(e.node)
    key = pod_req(ev.PodSpec(node_selector={"zone": "x"}, resources=ev.Resources(gpu=1)), "pods[0]").spec_key
    assert table.eligible("default", key).sum() == 2 and table.totals()[0] == 8
    table.set(gpu_nodes(1, gpus=4, labels={"zone": "x"}, unschedulable=True)[0].node)
    assert table.eligible("default", key).sum() == 1 and table.totals()[0] == 8
    table.remove("node-1")
    assert table.eligible("default", key).sum() == 0 and table.totals()[0] == 4
    assert table.served_mask().sum() == 1


def test_the_kept_gpu_index_is_the_one_a_fresh_build_gives_after_pods_come_move_and_go():
    table = NodeTable()
    for e in gpu_nodes(3, gpus=4):
        table.set(e.node)
    whole = pod_req(ev.PodSpec(resources=ev.Resources(gpu=2)), "pods[0]")
    half = pod_req(ev.PodSpec(resources=ev.Resources(gpu=0.5)), "pods[0]")

    def same_as_fresh() -> None:
        kept = table.gpu_index("binpack")  # ranks the nodes first, as a cycle does
        fresh = pl.build_gpu_index(table.arrays, table.served_mask(), "binpack")
        assert all((a == b).all() for a, b in zip(kept[:-1], fresh[:-1], strict=True))

    same_as_fresh()
    table.hold(whole, 0, (0, 1), 0.0, pl.D_USED, +1)
    table.hold(half, 1, (2,), 0.5, pl.D_USED, +1)
    table.mark_shared(half, 1, (2,), +1)
    same_as_fresh()
    table.move(whole, 0, (0, 1), 0.0, +1)
    same_as_fresh()
    table.hold(whole, 0, (0, 1), 0.0, pl.D_REL, -1)
    table.set(gpu_nodes(1, gpus=8, prefix="big")[0].node)
    same_as_fresh()


def test_a_session_that_evicted_before_it_first_placed_indexes_its_own_arrays_not_the_states():
    from muster.scheduler.config import AllocatorConfig
    from muster.scheduler.engine import Allocator

    engine = Allocator(AllocatorConfig())
    for e in [
        *gpu_nodes(2, gpus=2),
        queue("team"),
        gang_job("team", 2, name="train"),
        *_bound("train", 0, [0, 1], 0.0),
    ]:
        engine.apply(e)
    engine.state.node_table.gpu_index("binpack")  # kept from an earlier cycle
    s = engine._session(60.0)
    s.shift(engine.state.jobs["train"], 0, +1)
    fresh = pl.build_gpu_index(s.nodes, s.in_scope, "binpack")
    assert all((a == b).all() for a, b in zip(s.gpu_index()[:-1], fresh[:-1], strict=True))


def test_a_copy_of_the_kept_gpu_index_is_the_callers_to_place_on():
    table = NodeTable()
    table.set(gpu_nodes(1, gpus=4)[0].node)
    table.gpu_index("binpack").counts[:] = 99
    assert (table.gpu_index("binpack").counts != 99).any()


def test_what_the_nodes_offer_is_read_only_as_every_cycle_shares_it():
    table = NodeTable()
    table.set(gpu_nodes(1, gpus=4)[0].node)
    with pytest.raises(ValueError):
        table.served_mask()[0] = False


# -- queue sums and the ledger ----------------------------------------------------------------------


def test_queue_sums_count_pending_pods_as_requested_and_placed_ones_as_allocated():
    state = ClusterState()
    for e in [*gpu_nodes(1, gpus=4), gang_job("team", 3, name="train", preemptible=False)]:
        state.apply(e)
    state.apply(ev.BindRequested(job="train", pod=0, node="node-0", gpus=[0]))
    sums = state.queue_sums.by_queue["team"]
    assert (sums[0], sums[3], sums[6], sums[10]) == (1.0, 1.0, 2.0, 2.0)  # A_GPU, NP_GPU, R_GPU, R_PODS


def test_a_deleted_job_leaves_no_trace_in_the_ledger_the_sums_or_the_nodes():
    state = busy_state()
    for name in ("train", "notebook", "waiting", "handed-over"):
        state.apply(ev.PodGroupDeleted(name=name))
    assert not state.jobs and not state.ledger.pending_jobs and not state.ledger.running_jobs
    assert all(v == 0 for row in state.queue_sums.by_queue.values() for v in row)
    arrays = state.node_table.arrays
    assert not arrays.dev.any() and not arrays.ints[:, pl.N_CPU_USED].any()
    assert not state.adoptions.awaiting


# -- usage ------------------------------------------------------------------------------------------


def test_usage_keeps_an_interval_per_pod_that_stopped_until_the_window_has_passed_it():
    state = ClusterState(usage_window=UsageWindow(size=100.0))
    for e in [*gpu_nodes(1, gpus=2), gang_job("team", 1, name="a"), *_bound("a", 0, [0], 10.0)]:
        state.apply(e)
    state.apply(ev.PodCompleted(job="a", pod=0, node="node-0", at=30.0))
    usage = state.usage
    assert usage.intervals == {"team": [(10.0, 30.0, 1.0, 1000.0, float(GI))]}
    usage.forget_before(129.0)
    assert usage.intervals["team"]
    usage.forget_before(131.0)
    assert usage.intervals == {"team": []}


def test_usage_without_a_window_keeps_nothing():
    state = ClusterState()
    for e in [*gpu_nodes(1, gpus=2), gang_job("team", 1, name="a"), *_bound("a", 0, [0], 10.0)]:
        state.apply(e)
    state.apply(ev.PodCompleted(job="a", pod=0, node="node-0", at=30.0))
    assert state.usage.intervals == {}


# -- adoptions ------------------------------------------------------------------------------------


def test_pods_handed_over_before_their_group_exists_are_awaited_once_it_is_created():
    state = ClusterState()
    state.apply(ev.AdoptPods(pods=[ev.AdoptedPod(job="train", pod=1, node="node-0", gpus=[0])]))
    assert state.adoptions.by_group == {("train", ""): {1}} and not state.adoptions.awaiting
    state.apply(gang_job("team", 2, name="train"))
    assert state.adoptions.by_group == {} and state.adoptions.awaiting == {("train", 1)}


def test_a_pod_handed_over_for_another_submission_of_the_job_waits_for_that_one():
    adoptions = Adoptions()
    state = ClusterState()
    state.apply(gang_job("team", 1, name="train"))
    event = ev.AdoptPods(workload_uid="v2", pods=[ev.AdoptedPod(job="train", pod=0, node="n", gpus=[0])])
    adoptions.adopt(event, state.jobs)
    assert adoptions.by_group == {("train", "v2"): {0}} and not adoptions.awaiting
