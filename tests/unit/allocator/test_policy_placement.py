"""GPU pods placed by a benchmark policy: the allocator chooses what ``policies.place`` chooses on the
same cluster, fits exactly where binpack fits, and decides the same on replay."""

from __future__ import annotations

import msgspec
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from muster import events as ev
from muster.kernels import placement as pl
from muster.kernels import policies as pol
from muster.scheduler.config import GPU_POLICIES, AllocatorConfig
from muster.scheduler.policy_placement import PolicyPlacer, pod_seed, typical_shapes

from .builders import GI, allocator, gang_job, gpu_nodes, queue, run
from .test_batch_equivalence import _cluster, _feed, _jobs, _reference

USED = [0, 0, 0, 250, 500, 750, 1000]  # milli of a device in use; 1000 = held by a whole-GPU pod
POLICIES = list(GPU_POLICIES)


# -- building one cluster both ways --------------------------------------------------------------


@st.composite
def clusters(draw):
    """GPU nodes (and maybe a cpu-only one the view leaves out), listed in a shuffled rank order."""
    n = draw(st.integers(1, 7))
    nodes = []
    for rank in draw(st.permutations(range(n))):
        gpus = draw(st.sampled_from([1, 2, 4, 8]))
        cpu = draw(st.sampled_from([8000, 32000, 64000]))
        nodes.append(
            {
                "rank": rank,
                "gpus": gpus,
                "cpu": cpu,
                "cpu_used": draw(st.sampled_from([0, 0, 4000, cpu // 2, cpu])),
                "used": [draw(st.sampled_from(USED)) for _ in range(gpus)],
            }
        )
    if draw(st.booleans()):
        nodes.append({"rank": n, "gpus": 0, "cpu": 64000, "cpu_used": 0, "used": []})
    return nodes


@st.composite
def requests(draw):
    """(kind, whole devices, share, cpu) of a GPU pod."""
    cpu = draw(st.sampled_from([0, 1000, 4000, 16000]))
    if draw(st.booleans()):
        return (pl.WHOLE, draw(st.sampled_from([1, 1, 2, 4])), 0.0, cpu)
    return (pl.FRACTION, 0, draw(st.sampled_from([0.25, 0.5, 0.75])), cpu)


@st.composite
def shapes(draw):
    rows = draw(
        st.lists(
            st.sampled_from([(1, 1000), (2, 1000), (8, 1000), (1, 500), (1, 250)]), min_size=1, max_size=4
        )
    )
    cpu = [draw(st.sampled_from([0, 4000, 16000])) for _ in rows]
    weight = np.array([draw(st.integers(1, 5)) for _ in rows], dtype=np.float64)
    return pol.ShapeArrays(
        cpu=np.array(cpu, dtype=np.int64),
        num_gpu=np.array([k for k, _ in rows], dtype=np.int64),
        gpu_milli=np.array([m for _, m in rows], dtype=np.int64),
        model_mask=np.full(len(rows), -1, dtype=np.int64),
        weight=weight / weight.sum(),
        mem=np.zeros(len(rows), dtype=np.int64),
    )


def allocator_nodes(nodes: list[dict]) -> pl.NodeArrays:
    arr = pl.empty_nodes(len(nodes), 8)
    for i, n in enumerate(nodes):
        arr.ints[i, [pl.N_GPUS, pl.N_DEV_MEM, pl.N_CPU_CAP, pl.N_CPU_USED, pl.N_MEM_CAP, pl.N_RANK]] = (
            n["gpus"],
            80 * GI,
            n["cpu"],
            n["cpu_used"],
            64 * GI,
            n["rank"],
        )
        for d, milli in enumerate(n["used"]):
            arr.dev[pl.D_USED, i, d] = milli / 1000
            arr.dev[pl.D_FRAC, i, d] = 1.0 if 0 < milli < 1000 else 0.0
    return arr


def policy_cluster(nodes: list[dict]) -> tuple[pol.NodeArrays, list[int]]:
    """The equivalent cluster for ``policies``: the GPU nodes in rank order, and the slot of each row."""
    slots = sorted((i for i, n in enumerate(nodes) if n["gpus"]), key=lambda i: nodes[i]["rank"])
    view = pol.make_nodes(
        np.array([nodes[i]["cpu"] for i in slots]),
        np.full(len(slots), 64 * GI),
        np.array([nodes[i]["gpus"] for i in slots]),
        np.zeros(len(slots), dtype=np.int64),
        max_gpus=8,
    )
    for row, i in enumerate(slots):
        view.cpu_free[row] -= nodes[i]["cpu_used"]
        for d, milli in enumerate(nodes[i]["used"]):
            view.dev_free[row, d] -= milli
    return view, slots


def one_pod(
    request: tuple,
    n_nodes: int,
    eligible: np.ndarray | None = None,
    ext: int | None = None,
    gpu_memory: int = 0,
) -> pl.PodArrays:
    """A pod of ``request`` (a gpu-memory pod if ``gpu_memory``); ``ext``: its amount of the one extended
    resource (None: the cluster has none)."""
    kind, whole, share, cpu = request
    if gpu_memory:
        kind, whole, share = pl.MEMORY, 0, 0.0
    n_ext = 0 if ext is None else 1
    return pl.PodArrays(
        np.array([[kind, whole, gpu_memory, cpu, GI, 0]], dtype=np.int64),
        np.array([share]),
        np.full((1, n_ext), ext, dtype=np.int64),
        np.ones((1, n_nodes), dtype=np.bool_) if eligible is None else eligible.reshape(1, -1),
    )


def placer_for(
    policy: str, arr: pl.NodeArrays, shape_arrays: pol.ShapeArrays
) -> tuple[PolicyPlacer, pl.GpuIndex]:
    index = pl.build_gpu_index(arr, np.ones(arr.ints.shape[0], dtype=np.bool_))
    return PolicyPlacer(policy, arr, index, shape_arrays), index


# -- the oracle ----------------------------------------------------------------------------------


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters(), st.lists(requests(), min_size=1, max_size=6), shapes(), st.sampled_from(POLICIES))
def test_each_pod_goes_where_policies_place_puts_it_on_the_same_cluster(nodes, pods, shape_arrays, policy):
    arr = allocator_nodes(nodes)
    placer, index = placer_for(policy, arr, shape_arrays)
    view, slots = policy_cluster(nodes)
    for i, request in enumerate(pods):
        kind, whole, share, cpu = request
        pod = pol.PodRequest(cpu, GI, whole or 1, 1000 if kind == pl.WHOLE else round(share * 1000))
        want = pol.place(policy, view, pod, rng=np.random.default_rng(i), shapes=shape_arrays)
        got = placer.place(arr, one_pod(request, len(nodes)), index, "binpack", [i])
        if want.node < 0:
            assert got.count == 0
            continue
        pol.commit(view, pod, want)
        assert got.count == 1
        assert int(got.node[0]) == slots[want.node]
        assert tuple(d for d in got.devices[0].tolist() if d >= 0) == want.devices


@settings(max_examples=100, deadline=None)
@given(clusters(), st.lists(requests(), min_size=1, max_size=6), st.sampled_from(POLICIES))
def test_the_view_follows_every_change_to_the_working_arrays(nodes, pods, policy):
    arr = allocator_nodes(nodes)
    placer, index = placer_for(policy, arr, pol.empty_shapes())
    for i, request in enumerate(pods):
        arrays = one_pod(request, len(nodes))
        got = placer.place(arr, arrays, index, "binpack", [i])
        if i % 2:  # undone behind the placer's back, as a statement's rollback does
            pl.unplace(arr, arrays, got, index=index)
            placer.sync(arr, i)
    fresh = pl.view_rows(arr, placer.slots, True)
    assert np.array_equal(placer.rows, fresh)
    assert np.array_equal(placer._table[placer.class_of], fresh)


# -- feasibility is binpack's --------------------------------------------------------------------


@st.composite
def messy(draw):
    """A cluster with releasing resources, a node mask and an extended resource, and one GPU pod (maybe a
    gpu-memory one)."""
    nodes = draw(clusters())
    arr = allocator_nodes(nodes)
    n = len(nodes)
    arr = pl.NodeArrays(arr.ints, arr.dev, np.zeros((3, n, 1), dtype=np.int64))
    for i, node in enumerate(nodes):
        for d, milli in enumerate(node["used"]):
            if milli and draw(st.integers(0, 3)) == 0:  # this pod is being evicted
                arr.dev[pl.D_USED, i, d] = 0.0
                arr.dev[pl.D_REL, i, d] = milli / 1000
        arr.ext[pl.E_CAP, i, 0] = draw(st.sampled_from([0, 1, 2]))
    if draw(st.booleans()):  # mixed device memories: a gpu-memory pod has no one share, binpack places it
        arr.ints[:, pl.N_DEV_MEM] = [draw(st.sampled_from([40 * GI, 80 * GI])) for _ in range(n)]
    eligible = np.array([draw(st.booleans()) or i == 0 for i in range(n)], dtype=np.bool_)
    gpu_memory = draw(st.sampled_from([0, 0, 20 * GI, 40 * GI]))
    return arr, one_pod(draw(requests()), n, eligible, draw(st.sampled_from([0, 1])), gpu_memory)


@settings(max_examples=300, deadline=None)
@given(messy(), st.sampled_from(POLICIES))
def test_a_policy_places_a_pod_exactly_when_binpack_does(case, policy):
    arr, pods = case
    kai = pl.NodeArrays(arr.ints.copy(), arr.dev.copy(), arr.ext.copy())
    want = pl.place(kai, pods, "binpack", "binpack")
    before = pl.NodeArrays(arr.ints.copy(), arr.dev.copy(), arr.ext.copy())
    placer, index = placer_for(policy, arr, pol.empty_shapes())
    got = placer.place(arr, pods, index, "binpack", [7])
    assert got.count == want.count
    if not got.count:
        return
    fits, idle = _fits(before, pods)
    node = int(got.node[0])
    assert node in fits
    if placer.request(pods, 0) is None:
        # no size in milli (a gpu-memory pod, devices of several sizes): binpack's own choice, whose
        # +1000 for a shared device the pod fits on may pipeline it although another node has room
        assert (node, bool(got.pipelined[0])) == (int(want.node[0]), bool(want.pipelined[0]))
    else:
        # the policy pipelines only when no node has room on idle resources
        assert got.pipelined[0] == (not idle) and (node in idle or not idle)


def _fits(nodes: pl.NodeArrays, pods: pl.PodArrays) -> tuple[set[int], set[int]]:
    """Nodes where binpack's test lets the pod run, and those where it runs on idle resources."""
    request = pl._request(pods, 0)
    fits, idle = set(), set()
    for n in np.flatnonzero(pods.eligible[0]).tolist():
        ok, tier = pl._binpack_fit(nodes, n, request)
        if ok:
            fits.add(n)
            if tier % 1000 >= 100:
                idle.add(n)
    return fits, idle


# -- config, shapes, randomness ------------------------------------------------------------------


def test_every_gpu_placement_policy_is_one_of_the_benchmark_policies():
    assert set(GPU_POLICIES) <= set(pol.POLICIES)


@pytest.mark.parametrize("policy", POLICIES)
def test_placement_gpu_accepts_each_policy(policy):
    assert AllocatorConfig(placement_gpu=policy).placement_gpu == policy


def test_an_unknown_gpu_policy_is_refused_naming_the_field():
    with pytest.raises(ValueError, match="placement_gpu"):
        AllocatorConfig(placement_gpu="fgd-packing")


def test_cpu_pods_keep_the_kai_strategies_only():
    with pytest.raises(ValueError, match="placement_cpu"):
        AllocatorConfig(placement_cpu="fgd-pack")


def test_typical_shapes_are_the_commonest_gpu_requests_of_pending_and_running_pods():
    a = allocator(
        gpu_nodes(2),
        queue("a", gpu_quota=16),
        gang_job("a", 3, gpu=1, cpu=4, name="ones"),
        gang_job("a", 1, gpu=2, cpu=8, name="two"),
        gang_job("a", 2, gpu=0.5, cpu=1, name="halves"),
        gang_job("a", 5, gpu=0, cpu=1, name="cpu-only"),
    )
    got = typical_shapes(a.state, 80 * GI, top=2)
    assert list(zip(got.num_gpu.tolist(), got.gpu_milli.tolist(), got.cpu.tolist(), strict=True)) == [
        (1, 1000, 4000),
        (1, 500, 1000),
    ]
    assert got.weight.tolist() == [0.6, 0.4]


def test_the_random_seed_is_a_function_of_cycle_job_and_pod():
    seeds = [pod_seed(c, job, pod) for c, job, pod in [(3, "a", 0), (4, "a", 0), (3, "b", 0), (3, "a", 1)]]
    assert pod_seed(3, "a", 0) == seeds[0]
    assert len(set(seeds)) == 4


def _workload() -> list:
    jobs = [
        gang_job("a", k, gpu=g, cpu=c, name=f"j{i}", submitted_at=float(i))
        for i, (k, g, c) in enumerate(
            [(2, 1, 4), (1, 0.5, 2), (1, 4, 16), (3, 1, 8), (2, 0.25, 1), (1, 2, 4)] * 3
        )
    ]
    return [gpu_nodes(6, gpus=8), queue("a", gpu_quota=48), *jobs]


def _decisions(policy: str) -> list[bytes]:
    a = allocator(*_workload(), placement_gpu=policy)
    out = []
    for c in range(1, 4):
        result = a.cycle(float(c), cycle=c)
        out.extend(ev.encode_event(d) for d in result.decisions)
        for d in result.decisions:
            a.apply(d)
    return out


@pytest.mark.parametrize("policy", ["random", "fgd-pack"])
def test_a_replay_decides_the_same(policy):
    first = _decisions(policy)
    assert first and first == _decisions(policy)


@pytest.mark.parametrize("policy", POLICIES)
def test_a_gang_that_does_not_fit_places_nothing(policy):
    a = allocator(
        gpu_nodes(2, gpus=4),
        queue("a", gpu_quota=8),
        gang_job("a", 3, gpu=3, name="too-big"),
        placement_gpu=policy,
    )
    run(a)
    assert all(p.node is None or p.node == "" for p in a.snapshot().jobs["too-big"].pods)


@settings(max_examples=12, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from(POLICIES))
def test_the_batch_kernel_hands_policy_jobs_to_the_reference_loop_unchanged(seed, policy):
    rng = np.random.default_rng(seed)
    config = AllocatorConfig(placement_gpu=policy)
    fast, reference = allocator(config=config), _reference(config)
    _feed([fast, reference], _cluster(rng) + _jobs(rng, int(rng.integers(5, 40)), "a", 0.0))
    for c in range(1, 4):
        outs = [a.cycle(float(c), cycle=c) for a in (fast, reference)]
        assert msgspec.json.encode(outs[0]) == msgspec.json.encode(outs[1])
        follow: list[ev.Event] = [outs[0].completed, *outs[0].decisions]
        for d in outs[0].decisions:
            if isinstance(d, ev.BindRequested):
                follow.append(
                    ev.PodBound(job=d.job, pod=d.pod, node=d.node, gpus=d.gpus, gpu_share=d.gpu_share, at=c)
                )
            elif isinstance(d, ev.EvictionRequested):
                follow.append(ev.PodEvicted(job=d.job, pod=d.pod, node=d.node))
        _feed([fast, reference], follow + _jobs(rng, int(rng.integers(0, 10)), f"c{c}-", float(c)))
