"""Every placement policy picks the same node and devices as its naive oracle."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from muster.kernels import policies as pol

from tests.unit.bench import naive_policies as naive

MODELS = 3
ALL = (1 << MODELS) - 1


@st.composite
def clusters(draw):
    n = draw(st.integers(1, 6))
    nodes = []
    for _ in range(n):
        ndev = draw(st.integers(0, 4))
        cpu_cap = draw(st.sampled_from([4000, 8000, 16000]))
        mem_cap = draw(st.sampled_from([100, 200]))
        busy = draw(st.booleans())
        devs = [draw(st.sampled_from([0, 190, 300, 530, 1000])) if busy else 1000 for _ in range(ndev)]
        cpu = draw(st.integers(0, cpu_cap // 1000)) * 1000 if busy else cpu_cap
        mem = draw(st.integers(0, mem_cap // 50)) * 50 if busy else mem_cap
        nodes.append(
            {
                "cpu": cpu,
                "mem": mem,
                "cpu_cap": cpu_cap,
                "mem_cap": mem_cap,
                "model": draw(st.integers(0, 2)),
                "devs": devs,
            }
        )
    return nodes


@st.composite
def pods(draw):
    kind = draw(st.sampled_from(["cpu", "share", "whole"]))
    cpu = draw(st.integers(0, 8)) * 1000
    mem = draw(st.integers(0, 4)) * 50
    mask = draw(st.one_of(st.just(-1), st.integers(1, ALL)))
    if kind == "cpu":
        return (cpu, mem, 0, 0, -1)
    if kind == "share":
        return (cpu, mem, 1, draw(st.sampled_from([160, 300, 470, 810])), mask)
    return (cpu, mem, draw(st.integers(1, 3)), 1000, mask)


@st.composite
def shape_lists(draw):
    out = []
    for _ in range(draw(st.integers(1, 4))):
        k, m = draw(st.sampled_from([(0, 0), (1, 230), (1, 470), (1, 810), (1, 1000), (2, 1000)]))
        mask = draw(st.one_of(st.just(-1), st.integers(1, ALL)))
        # eighths keep every weighted sum exact in floating point
        out.append((draw(st.integers(0, 6)) * 1000, k, m, mask, draw(st.integers(1, 8)) / 8))
    return out


def to_arrays(cluster: list[dict]) -> pol.NodeArrays:
    width = max([len(node["devs"]) for node in cluster] + [1])
    nodes = pol.make_nodes(
        np.array([node["cpu_cap"] for node in cluster]),
        np.array([node["mem_cap"] for node in cluster]),
        np.array([len(node["devs"]) for node in cluster]),
        np.array([node["model"] for node in cluster]),
        max_gpus=width,
    )
    for i, node in enumerate(cluster):
        nodes.cpu_free[i] = node["cpu"]
        nodes.mem_free[i] = node["mem"]
        nodes.dev_free[i, : len(node["devs"])] = node["devs"]
    return nodes


def to_shapes(shapes: list[tuple]) -> pol.ShapeArrays:
    cols = list(zip(*shapes, strict=True))
    return pol.ShapeArrays(
        cpu=np.array(cols[0]),
        num_gpu=np.array(cols[1]),
        gpu_milli=np.array(cols[2]),
        model_mask=np.array(cols[3]),
        weight=np.array(cols[4], dtype=float),
        mem=np.zeros(len(shapes), dtype=np.int64),
    )


class FixedRng:
    """Hands out the given uniforms, so kernel and oracle see the same draws."""

    def __init__(self, u):
        self.u = np.array(u)

    def random(self, n):
        return self.u[:n]


@pytest.mark.parametrize("policy", list(pol.POLICIES))
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    cluster=clusters(),
    pod=pods(),
    shapes=shape_lists(),
    u=st.tuples(st.floats(0, 0.999), st.floats(0, 0.999)),
)
def test_policy_chooses_the_node_and_devices_its_oracle_chooses(policy, cluster, pod, shapes, u):
    nodes = to_arrays(cluster)
    got = pol.place(policy, nodes, pol.PodRequest(*pod), rng=FixedRng(u), shapes=to_shapes(shapes))
    want = naive.choose(policy, cluster, pod, u[0], u[1], shapes)
    assert (got.node, list(got.devices)) == want


@pytest.mark.parametrize("policy", list(pol.POLICIES))
@settings(max_examples=40, deadline=None)
@given(cluster=clusters(), pod_list=st.lists(pods(), min_size=1, max_size=12), shapes=shape_lists())
def test_simulate_places_each_pod_as_place_then_commit_would(policy, cluster, pod_list, shapes):
    u = np.random.default_rng(7).random((len(pod_list), 2))
    step = to_arrays(cluster)
    want = []
    for i, p in enumerate(pod_list):
        pick = pol.place(policy, step, pol.PodRequest(*p), rng=FixedRng(u[i]), shapes=to_shapes(shapes))
        want.append(pick.node)
        if pick.node >= 0:
            pol.commit(step, pol.PodRequest(*p), pick)
    batch = to_arrays(cluster)
    got = pol.simulate(
        policy, batch, [pol.PodRequest(*p) for p in pod_list], uniforms=u, shapes=to_shapes(shapes)
    )
    assert got.tolist() == want
    assert np.array_equal(batch.dev_free, step.dev_free) and np.array_equal(batch.cpu_free, step.cpu_free)


@settings(max_examples=100, deadline=None)
@given(cluster=clusters(), shapes=shape_lists())
def test_each_nodes_fragmentation_is_what_the_oracle_measures(cluster, shapes):
    nodes = to_arrays(cluster)
    for policy, measure in (("fgd", naive.fgd_frag), ("fgd-pack", naive.fgd_pack_measure)):
        got = pol.node_fragmentation(nodes, to_shapes(shapes), policy)
        want = [measure(node["cpu"], node["devs"], node["model"], shapes) for node in cluster]
        assert got.tolist() == pytest.approx(want)


def test_fgd_pack_weighs_stranded_milli_once_and_fgds_fragmentation_twelve_times():
    nodes = pol.make_nodes(np.array([8000]), np.array([100]), np.array([2]), np.array([0]))
    nodes.dev_free[0] = [1000, 300]
    shapes = to_shapes([(0, 1, 470, -1, 1.0)])
    # two 470s fit on the idle device: 1300 - 940 = 360 stranded; FGD: the 300 device
    assert pol.node_fragmentation(nodes, shapes, "fgd-pack").tolist() == [360 + 12 * 300]


def test_ties_go_to_the_lowest_node_index():
    nodes = pol.make_nodes(np.array([8000] * 3), np.array([100] * 3), np.array([2] * 3), np.array([0] * 3))
    for policy in ("bestfit", "packing", "binpack", "spread", "fgd", "fgd-pack"):
        shapes = to_shapes([(1000, 1, 1000, -1, 1.0)])
        assert pol.place(policy, nodes, pol.PodRequest(1000, 10, 1, 1000), shapes=shapes).node == 0


def test_a_model_that_constrained_shapes_need_is_pressed_by_their_share_of_the_demand():
    # two models of 4 GPUs each; a quarter of the GPU demand accepts only model 1
    nodes = pol.make_nodes(np.array([8000, 8000]), np.array([100, 100]), np.array([4, 4]), np.array([0, 1]))
    shapes = to_shapes([(0, 1, 1000, 0b10, 0.25), (0, 1, 1000, -1, 0.75)])
    pressure = pol._model_pressure(nodes, shapes)
    # a cluster's worth of demand puts 0.25 x 8 GPUs on model 1's 4 GPUs
    assert pressure[1] == pytest.approx(0.5)
    assert pressure[0] == 0.0


def test_shapes_that_accept_every_model_press_on_none():
    nodes = pol.make_nodes(np.array([8000, 8000]), np.array([100, 100]), np.array([4, 4]), np.array([0, 1]))
    shapes = to_shapes([(0, 1, 1000, 0b11, 0.5), (0, 2, 1000, -1, 0.5)])
    assert not pol._model_pressure(nodes, shapes).any()


def test_an_unconstrained_pod_leaves_a_scarce_model_to_the_pods_that_need_it():
    # node 0 is the only model-1 node and half the demand can run only there; node 1
    # (model 0) strands its second GPU if the pod takes its last CPU, so the measure
    # alone prefers node 0, and the pressure cost sends the pod to node 1
    def cluster():
        nodes = pol.make_nodes(
            np.array([8000, 8000]), np.array([100, 100]), np.array([2, 2]), np.array([1, 0])
        )
        nodes.cpu_free[1] = 4000
        return nodes

    shapes = to_shapes([(2000, 1, 1000, 0b10, 0.5), (2000, 1, 1000, -1, 0.5)])
    pod = [pol.PodRequest(4000, 0, 1, 1000)]
    no_cost = pol.FGD_PACK_KNOBS.copy()
    no_cost[5] = 0.0
    assert pol.simulate("fgd-pack", cluster(), pod, shapes=shapes, knobs=no_cost).tolist() == [0]
    assert pol.simulate("fgd-pack", cluster(), pod, shapes=shapes).tolist() == [1]


def test_gpu_spec_keeps_a_pod_off_other_models():
    nodes = pol.make_nodes(np.array([8000, 8000]), np.array([100, 100]), np.array([2, 2]), np.array([0, 1]))
    pick = pol.place("bestfit", nodes, pol.PodRequest(1000, 10, 1, 500, model_mask=0b10))
    assert pick.node == 1


def test_a_fraction_goes_to_the_most_used_device_under_binpack_and_an_idle_one_under_spread():
    nodes = pol.make_nodes(np.array([8000]), np.array([100]), np.array([3]), np.array([0]))
    nodes.dev_free[0] = [1000, 400, 700]
    pod = pol.PodRequest(0, 0, 1, 300)
    assert pol.place("binpack", nodes, pod).devices == (1,)
    assert pol.place("spread", nodes, pod).devices == (0,)


def test_whole_gpu_requests_take_the_lowest_numbered_idle_devices():
    nodes = pol.make_nodes(np.array([8000]), np.array([100]), np.array([4]), np.array([0]))
    nodes.dev_free[0] = [500, 1000, 1000, 1000]
    assert pol.place("spread", nodes, pol.PodRequest(0, 0, 2, 1000)).devices == (1, 2)


def test_nothing_fits_means_node_minus_one():
    nodes = pol.make_nodes(np.array([1000]), np.array([100]), np.array([1]), np.array([0]))
    assert pol.place("bestfit", nodes, pol.PodRequest(2000, 10, 0, 0)) == pol.Placement(-1, ())


def test_unknown_policy_is_rejected_by_name():
    nodes = pol.make_nodes(np.array([1000]), np.array([100]), np.array([1]), np.array([0]))
    with pytest.raises(ValueError, match="policy: unknown 'nope'"):
        pol.place("nope", nodes, pol.PodRequest(0, 0, 0, 0))


def test_a_fraction_with_several_gpus_is_rejected_naming_the_field():
    nodes = pol.make_nodes(np.array([1000]), np.array([100]), np.array([1]), np.array([0]))
    with pytest.raises(ValueError, match="pod.gpu_milli"):
        pol.place("bestfit", nodes, pol.PodRequest(0, 0, 2, 500))


def test_fragmentation_policies_need_typical_shapes():
    nodes = pol.make_nodes(np.array([1000]), np.array([100]), np.array([1]), np.array([0]))
    with pytest.raises(ValueError, match="shapes"):
        pol.place("fgd", nodes, pol.PodRequest(0, 0, 1, 500))


def test_random_policy_needs_a_seeded_generator():
    nodes = pol.make_nodes(np.array([1000]), np.array([100]), np.array([1]), np.array([0]))
    with pytest.raises(ValueError, match="rng"):
        pol.place("random", nodes, pol.PodRequest(0, 0, 1, 500))
