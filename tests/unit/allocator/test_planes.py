"""A pod's resources on its node: added, taken away, moved between the used and releasing planes."""

from __future__ import annotations

import numpy as np
import pytest
from muster import events as ev
from muster.kernels import placement as pl
from muster.scheduler.state import planes, pod_req

from .builders import GI, allocator, gang_job, gpu_nodes, queue

EXT = ["example.com/nic"]


def arrays() -> pl.NodeArrays:
    nodes = pl.empty_nodes(2, 4, len(EXT))
    nodes.ints[:, pl.N_GPUS] = 4
    return nodes


def req(gpu: float = 1, gpu_memory: int = 0, nic: int = 0):
    resources = ev.Resources(
        gpu=gpu, gpu_memory=gpu_memory, cpu=2000, memory=4 * GI, extended={EXT[0]: nic} if nic else {}
    )
    return pod_req(ev.PodSpec(resources=resources), "pods[0]")


def copy(nodes: pl.NodeArrays) -> pl.NodeArrays:
    return pl.NodeArrays(nodes.ints.copy(), nodes.dev.copy(), nodes.ext.copy())


def node_row(nodes: pl.NodeArrays, slot: int) -> tuple[np.ndarray, ...]:
    return (nodes.ints[slot], nodes.dev[:, slot], nodes.ext[:, slot])


def same(a: tuple[np.ndarray, ...], b: tuple[np.ndarray, ...]) -> bool:
    return all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))


@pytest.mark.parametrize(
    ("pod", "gpus", "share"),
    [
        (req(gpu=2, nic=1), (1, 3), 0.0),
        (req(gpu=0.25), (2,), 0.25),
        (req(gpu=0, gpu_memory=20 * GI), (0,), 0.25),
    ],
)
def test_a_pod_moved_to_releasing_holds_there_what_it_held_in_use(pod, gpus, share):
    held = arrays()
    planes.hold(held, EXT, pod, 1, gpus, share, pl.D_USED, +1)
    moved = copy(held)
    planes.move(moved, EXT, pod, 1, gpus, share, +1)
    expected = arrays()
    planes.hold(expected, EXT, pod, 1, gpus, share, pl.D_REL, +1)
    assert same(moved, expected)
    planes.move(moved, EXT, pod, 1, gpus, share, -1)
    assert same(moved, held)


def test_a_whole_gpu_pod_holds_each_of_its_devices_and_its_cpu_memory_and_extended_resources():
    nodes = arrays()
    planes.hold(nodes, EXT, req(gpu=2, nic=3), 0, (0, 2), 0.0, pl.D_USED, +1)
    assert nodes.dev[pl.D_USED, 0].tolist() == [1.0, 0.0, 1.0, 0.0]
    assert (nodes.ints[0, pl.N_CPU_USED], nodes.ints[0, pl.N_MEM_USED]) == (2000, 4 * GI)
    assert nodes.ext[pl.E_USED, 0, 0] == 3
    assert same(node_row(nodes, 1), node_row(arrays(), 1))  # the other node is untouched


def test_what_fractions_leave_behind_below_eps_is_zero():
    nodes = arrays()
    for share in (0.1, 0.2):
        planes.hold(nodes, EXT, req(gpu=share), 0, (1,), share, pl.D_USED, +1)
    for share in (0.2, 0.1):
        planes.hold(nodes, EXT, req(gpu=share), 0, (1,), share, pl.D_USED, -1)
    assert nodes.dev[pl.D_USED, 0, 1] == 0.0


def test_a_device_the_node_does_not_have_is_not_held():
    nodes = arrays()
    planes.hold(nodes, EXT, req(gpu=2), 0, (3, 9), 0.0, pl.D_USED, +1)
    assert nodes.dev[pl.D_USED, 0].tolist() == [0.0, 0.0, 0.0, 1.0]


def test_shared_devices_count_their_fractional_pods():
    nodes = arrays()
    for _ in range(2):
        planes.mark_shared(nodes, req(gpu=0.5), 0, (1,), +1)
    planes.mark_shared(nodes, req(gpu=1), 0, (2,), +1)  # a whole device is not shared
    assert nodes.dev[pl.D_FRAC, 0].tolist() == [0.0, 2.0, 0.0, 0.0]


def test_an_eviction_a_session_decides_leaves_its_arrays_as_the_state_holds_them_once_folded():
    a = allocator(
        gpu_nodes(1, gpus=4),
        queue("team", gpu_quota=4),
        gang_job("team", 2, name="train"),
        gang_job("team", 1, gpu=0.5, name="notebook"),
    )
    out = a.cycle(1.0, cycle=1)
    for d in out.decisions:
        a.apply(d)
    session = a._session(2.0)
    jobs = a.state.jobs
    victims = [(jobs["train"], 1), (jobs["notebook"], 0)]
    for job, i in victims:
        session.shift(job, i, +1)
    for job, i in victims:
        a.apply(ev.EvictionRequested(job=job.name, pod=i, node="node-0"))
    assert same(session.nodes, a.state.node_table.arrays)
