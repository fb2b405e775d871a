import copy

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from muster.kernels import placement as pl

from . import naive

GI = 2**30
KINDS = {"cpu": pl.CPU_ONLY, "whole": pl.WHOLE, "fraction": pl.FRACTION, "memory": pl.MEMORY}


def to_arrays(nodes: list[dict], pods: list[dict], n_specs: int = 2) -> tuple[pl.NodeArrays, pl.PodArrays]:
    g = max([n["gpus"] for n in nodes] + [1])
    arr = pl.empty_nodes(len(nodes), g)
    ranks = {n["name"]: r for r, n in enumerate(sorted(nodes, key=lambda n: n["name"]))}
    for i, n in enumerate(nodes):
        arr.ints[
            i, [pl.N_GPUS, pl.N_DEV_MEM, pl.N_CPU_CAP, pl.N_MEM_CAP, pl.N_CPU_USED, pl.N_MEM_USED, pl.N_RANK]
        ] = (n["gpus"], n["dev_mem"], n["cpu"], n["mem"], n["cpu_used"], n["mem_used"], ranks[n["name"]])
        arr.dev[pl.D_USED, i, : n["gpus"]] = n["used"]
        arr.dev[pl.D_FRAC, i, : n["gpus"]] = n["frac"]
    ints = np.zeros((len(pods), pl.P_INT_COLS), dtype=np.int64)
    for r, p in enumerate(pods):
        ints[r] = (KINDS[p["kind"]], p["n"], p["gpu_mem"], p["cpu"], p["mem"], p["spec"])
    elig = np.array([[s in n["eligible"] for n in nodes] for s in range(n_specs)], dtype=np.bool_)
    pods_a = pl.PodArrays(
        ints,
        np.array([p["share"] for p in pods], dtype=float),
        np.zeros((len(pods), 0), dtype=np.int64),
        elig,
    )
    return arr, pods_a


@st.composite
def clusters(draw):
    n = draw(st.integers(1, 7))
    nodes = []
    for i in draw(st.permutations(range(n))):
        gpus = draw(st.sampled_from([0, 1, 2, 4, 8]))
        used = [draw(st.sampled_from([0.0, 0.0, 1.0, 0.25, 0.5])) for _ in range(gpus)]
        frac = [1 if 0 < u < 1 else 0 for u in used]
        cpu = draw(st.sampled_from([4000, 16000, 64000]))
        nodes.append(
            {
                "name": f"n{i:02d}",
                "gpus": gpus,
                "dev_mem": draw(st.sampled_from([0, 40 * GI, 80 * GI])) if gpus else 0,
                "cpu": cpu,
                "mem": 64 * GI,
                "cpu_used": draw(st.sampled_from([0, 1000, cpu])),
                "mem_used": 0,
                "used": used,
                "frac": frac,
                "eligible": set(draw(st.sets(st.sampled_from([0, 1]), min_size=1))),
            }
        )
    pods = []
    for _ in range(draw(st.integers(1, 12))):
        kind = draw(st.sampled_from(["cpu", "whole", "whole", "fraction", "memory"]))
        pods.append(
            {
                "kind": kind,
                "n": draw(st.sampled_from([1, 1, 2, 4])) if kind == "whole" else 0,
                "share": draw(st.sampled_from([0.25, 0.5, 0.75])) if kind == "fraction" else 0.0,
                "gpu_mem": draw(st.sampled_from([10 * GI, 20 * GI])) if kind == "memory" else 0,
                "cpu": draw(st.sampled_from([0, 1000, 4000])),
                "mem": GI,
                "spec": draw(st.sampled_from([0, 1])),
            }
        )
    return nodes, pods


@settings(max_examples=300, deadline=None)
@given(clusters(), st.sampled_from(["binpack", "spread"]), st.sampled_from(["binpack", "spread"]))
def test_scan_kernel_matches_the_naive_oracle(case, sg, sc):
    nodes, pods = case
    arr, pods_a = to_arrays(nodes, pods)
    got = pl.place(arr, pods_a, sg, sc)
    want = naive.place(copy.deepcopy(nodes), pods, sg, sc)
    assert got.count == len(want)
    for row, (node, devs, share, _) in enumerate(want):
        assert got.node[row] == node
        assert tuple(d for d in got.devices[row] if d >= 0) == devs
        assert got.share[row] == pytest.approx(share)


@settings(max_examples=200, deadline=None)
@given(clusters(), st.sampled_from(["binpack", "spread"]))
def test_bucketed_index_chooses_what_the_scan_chooses(case, sg):
    nodes, pods = case
    a1, p1 = to_arrays(nodes, pods)
    a2, p2 = to_arrays(nodes, pods)
    index = pl.build_gpu_index(a2, np.ones(len(nodes), dtype=np.bool_), sg)
    r1 = pl.place(a1, p1, sg, "binpack")
    r2 = pl.place(a2, p2, sg, "binpack", index=index)
    assert r1.count == r2.count
    np.testing.assert_array_equal(r1.node[: r1.count], r2.node[: r2.count])
    np.testing.assert_array_equal(a1.dev, a2.dev)


@settings(max_examples=200, deadline=None)
@given(clusters(), st.sampled_from(["binpack", "spread"]))
def test_no_node_or_device_is_ever_over_committed(case, sg):
    nodes, pods = case
    arr, pods_a = to_arrays(nodes, pods)
    before_ok = (arr.dev[pl.D_USED] <= 1 + 1e-9).all() and (
        arr.ints[:, pl.N_CPU_USED] <= arr.ints[:, pl.N_CPU_CAP]
    ).all()
    pl.place(arr, pods_a, sg, sg)
    if before_ok:
        assert (arr.dev[pl.D_USED] <= 1 + 1e-9).all()
        assert (arr.ints[:, pl.N_CPU_USED] <= arr.ints[:, pl.N_CPU_CAP]).all()
        assert (arr.ints[:, pl.N_MEM_USED] <= arr.ints[:, pl.N_MEM_CAP]).all()


@settings(max_examples=100, deadline=None)
@given(clusters(), st.sampled_from(["binpack", "spread"]))
def test_unplace_restores_the_arrays_exactly(case, sg):
    nodes, pods = case
    arr, pods_a = to_arrays(nodes, pods)
    index = pl.build_gpu_index(arr, np.ones(len(nodes), dtype=np.bool_), sg)
    before = (arr.ints.copy(), arr.dev.copy(), index.bits.copy())
    result = pl.place(arr, pods_a, sg, sg, index=index)
    pl.unplace(arr, pods_a, result, index=index)
    np.testing.assert_array_equal(arr.ints, before[0])
    np.testing.assert_allclose(arr.dev, before[1], atol=1e-12)
    np.testing.assert_array_equal(index.bits, before[2])


def _uniform(n_nodes, gpus=8):
    nodes = [
        {
            "name": f"n{i:02d}",
            "gpus": gpus,
            "dev_mem": 80 * GI,
            "cpu": 64000,
            "mem": 512 * GI,
            "cpu_used": 0,
            "mem_used": 0,
            "used": [0.0] * gpus,
            "frac": [0] * gpus,
            "eligible": {0},
        }
        for i in range(n_nodes)
    ]
    return nodes


def _whole(n=1, count=1):
    return [{"kind": "whole", "n": n, "share": 0.0, "gpu_mem": 0, "cpu": 1000, "mem": GI, "spec": 0}] * count


def test_binpack_fills_the_fullest_node_first():
    nodes = _uniform(3)
    nodes[2]["used"] = [1.0] * 6 + [0.0] * 2
    arr, pods = to_arrays(nodes, _whole(count=3))
    got = pl.place(arr, pods, "binpack", "binpack")
    assert list(got.node[:3]) == [2, 2, 0]


def test_spread_takes_the_emptiest_node_first():
    nodes = _uniform(3)
    nodes[0]["used"] = [1.0] + [0.0] * 7
    arr, pods = to_arrays(nodes, _whole(count=3))
    got = pl.place(arr, pods, "spread", "binpack")
    assert list(got.node[:3]) == [1, 2, 0]


def test_fraction_under_binpack_joins_the_most_used_shared_device():
    nodes = _uniform(2, gpus=2)
    nodes[1]["used"] = [0.25, 0.5]
    nodes[1]["frac"] = [1, 1]
    arr, pods = to_arrays(
        nodes, [{"kind": "fraction", "n": 0, "share": 0.5, "gpu_mem": 0, "cpu": 0, "mem": 0, "spec": 0}]
    )
    got = pl.place(arr, pods, "binpack", "binpack")
    assert (got.node[0], got.devices[0][0]) == (1, 1)


def test_a_pod_that_fits_nowhere_stops_the_gang_and_reports_how_many_were_placed():
    arr, pods = to_arrays(_uniform(1, gpus=2), _whole(count=3))
    assert pl.place(arr, pods, "binpack", "binpack").count == 2


def test_whole_pods_pipeline_onto_releasing_devices_only_when_nothing_is_idle():
    arr, pods = to_arrays(_uniform(2, gpus=1), _whole(count=1))
    arr.dev[pl.D_REL, 0, 0] = 1.0
    first = pl.place(arr, pods, "binpack", "binpack")
    assert (first.node[0], bool(first.pipelined[0])) == (1, False)
    second = pl.place(arr, pods, "binpack", "binpack")
    assert (second.node[0], bool(second.pipelined[0])) == (0, True)


@pytest.mark.parametrize("indexed", [False, True])
def test_releasing_first_takes_a_nodes_releasing_devices_before_its_idle_ones(indexed):
    arr, pods = to_arrays(_uniform(1, gpus=4), _whole(n=2))
    arr.dev[pl.D_REL, 0, :2] = 1.0
    index = pl.build_gpu_index(arr, np.ones(1, dtype=np.bool_)) if indexed else None
    got = pl.place(arr, pods, "binpack", "binpack", index=index, releasing_first=True)
    assert (tuple(got.devices[0][:2]), bool(got.pipelined[0])) == ((0, 1), True)


@pytest.mark.parametrize("indexed", [False, True])
def test_releasing_first_keeps_the_idle_devices_for_the_next_pod_of_the_gang(indexed):
    # both nodes: 4 releasing and 4 idle devices; idle-first leaves the first node without idle ones
    placed = {}
    for releasing_first in (False, True):
        arr, pods = to_arrays(_uniform(2), _whole(n=4, count=2))
        arr.dev[pl.D_REL, :, :4] = 1.0
        index = pl.build_gpu_index(arr, np.ones(2, dtype=np.bool_)) if indexed else None
        got = pl.place(arr, pods, "binpack", "binpack", index=index, releasing_first=releasing_first)
        placed[releasing_first] = list(got.node[:2])
    assert placed == {False: [0, 1], True: [0, 0]}


def test_room_counts_copies_per_node():
    arr, pods = to_arrays(_uniform(2, gpus=4), _whole(n=2, count=1))
    arr.dev[pl.D_USED, 1, :3] = 1.0
    assert list(pl.room(arr, pods, 0, 5)) == [2, 0]


@settings(max_examples=300, deadline=None)
@given(
    st.integers(0, 2**32 - 1),
    st.sampled_from(["binpack", "spread"]),
    st.sampled_from(["binpack", "spread"]),
)
def test_fractions_through_the_index_choose_what_the_scan_chooses_with_releasing_devices(seed, sg, sc):
    rng = np.random.default_rng(seed)
    n, g = int(rng.integers(1, 40)), 4
    arr = pl.empty_nodes(n, g)
    arr.ints[:, pl.N_GPUS] = rng.choice([0, 2, 4], n)
    arr.ints[:, pl.N_DEV_MEM] = rng.choice([40, 80], n) * GI
    arr.ints[:, pl.N_CPU_CAP] = 16000
    arr.ints[:, pl.N_CPU_USED] = rng.choice([0, 8000, 15000], n)
    arr.ints[:, pl.N_CPU_REL] = rng.choice([0, 1000], n)
    arr.ints[:, pl.N_MEM_CAP] = 64 * GI
    arr.ints[:, pl.N_RANK] = rng.permutation(n)
    for i in range(n):
        for d in range(int(arr.ints[i, pl.N_GPUS])):
            # (used, releasing, fractional pods): idle, whole, releasing, shared with room, full or nearly
            states = [(0, 0, 0), (0, 0, 0), (1, 0, 0), (0, 1, 0), (0.5, 0, 1), (0.25, 0.5, 2), (1, 0, 2)]
            states += [(0.99, 0, 3), (0, 0.5, 1), (0.985, 0, 2)]
            used, rel, frac = states[int(rng.integers(0, len(states)))]
            arr.dev[pl.D_USED, i, d], arr.dev[pl.D_REL, i, d], arr.dev[pl.D_FRAC, i, d] = used, rel, frac
    p = int(rng.integers(1, 30))
    ints = np.zeros((p, pl.P_INT_COLS), dtype=np.int64)
    ints[:, pl.P_KIND] = rng.choice([pl.FRACTION, pl.FRACTION, pl.MEMORY, pl.WHOLE], p)
    ints[:, pl.P_WHOLE] = np.where(ints[:, pl.P_KIND] == pl.WHOLE, 1, 0)
    ints[:, pl.P_GPU_MEM] = np.where(ints[:, pl.P_KIND] == pl.MEMORY, rng.choice([10, 30], p) * GI, 0)
    ints[:, pl.P_CPU] = rng.choice([0, 1000, 4000], p)
    ints[:, pl.P_SPEC] = rng.integers(0, 2, p)
    share = np.where(
        ints[:, pl.P_KIND] == pl.FRACTION, rng.choice([0.01, 0.015, 0.03125, 0.25, 0.5, 0.75], p), 0.0
    )
    elig = rng.random((2, n)) < 0.8
    pods = pl.PodArrays(ints, share, np.zeros((p, 0), dtype=np.int64), elig)
    scanned = pl.NodeArrays(arr.ints.copy(), arr.dev.copy(), arr.ext.copy())
    index = pl.build_gpu_index(arr, np.ones(n, dtype=np.bool_), sg)
    r1 = pl.place(scanned, pods, sg, sc)
    r2 = pl.place(arr, pods, sg, sc, index=index)
    assert r1.count == r2.count
    np.testing.assert_array_equal(r1.node[: r1.count], r2.node[: r2.count])
    np.testing.assert_array_equal(r1.devices[: r1.count], r2.devices[: r2.count])
    np.testing.assert_array_equal(scanned.dev, arr.dev)
