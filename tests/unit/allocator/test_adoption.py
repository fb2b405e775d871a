"""Pods already running when they are handed over: facts of the fleet, and no decision before them."""

from __future__ import annotations

import msgspec
from muster import events as ev
from muster.bus.base import Delivery
from muster.bus.memory import MemoryBus
from muster.events import decode_envelope
from muster.fleet.sim import SimFleet
from muster.scheduler.config import AllocatorConfig
from muster.scheduler.engine import Allocator
from muster.scheduler.state import PENDING
from muster.subjects import Subjects

from services.allocator.handlers import AllocatorHandlers
from services.binder.handlers import BinderHandlers
from tests.unit.allocator.builders import allocator, gang_job, gpu_nodes, queue

SUBJECTS = Subjects("test")


def handover(*pods: tuple[str, int, list[int]], uid: str = "", started_at: float = -30.0) -> ev.AdoptPods:
    """AdoptPods of (job, pod, devices) on node-0."""
    return ev.AdoptPods(
        workload_uid=uid,
        pods=[ev.AdoptedPod(job=j, pod=p, node="node-0", gpus=g, started_at=started_at) for j, p, g in pods],
    )


# -- the fold --------------------------------------------------------------------------------------


def test_a_pod_bound_with_no_decision_before_it_runs_where_the_fleet_says_since_it_started():
    a = allocator(
        gpu_nodes(1, 4),
        queue("team", gpu_quota=4),
        gang_job("team", 2, name="train"),
        ev.PodBound(job="train", pod=0, node="node-0", gpus=[2], at=-30.0),
    )
    snap = a.snapshot()
    assert snap.jobs["train"].status == "running"
    assert [(p.node, p.gpus) for p in snap.jobs["train"].pods] == [("node-0", [2])]
    assert snap.queues["team"].allocated["gpu"] == 1.0
    assert snap.nodes["node-0"].free["gpu"] == 3.0
    assert a.state.jobs["train"].last_start == -30.0


def test_the_next_cycle_places_around_an_adopted_pod():
    a = allocator(
        gpu_nodes(1, 2),
        queue("team", gpu_quota=2),
        gang_job("team", 1, name="old"),
        gang_job("team", 1, name="new"),
        ev.PodBound(job="old", pod=0, node="node-0", gpus=[0], at=0.0),
    )
    (bind,) = a.cycle(1.0, cycle=1).decisions
    assert (bind.job, bind.gpus) == ("new", [1])


def test_pods_handed_over_are_awaited_once_their_group_is_known_and_until_the_fleet_answers():
    a = allocator(gpu_nodes(1, 4), queue("team", gpu_quota=4), handover(("train", 0, [0]), ("train", 1, [1])))
    assert a.state.adoptions.awaiting == set()
    a.apply(gang_job("team", 2, name="train"))
    assert a.state.adoptions.awaiting == {("train", 0), ("train", 1)}
    a.apply(ev.PodBound(job="train", pod=0, node="node-0", gpus=[0], at=-30.0))
    a.apply(ev.BindFailed(job="train", pod=1, node="node-0", reason="device 1 of node node-0 is in use"))
    assert a.state.adoptions.awaiting == set()
    assert a.state.jobs["train"].state[1] == PENDING


def test_a_handover_after_its_group_is_awaited_at_once():
    a = allocator(gpu_nodes(1, 4), queue("team", gpu_quota=4), gang_job("team", 1, name="train"))
    a.apply(handover(("train", 0, [0])))
    assert a.state.adoptions.awaiting == {("train", 0)}


def test_a_handover_names_one_submission_and_a_group_of_another_is_not_awaited():
    a = allocator(
        gpu_nodes(1, 4),
        queue("team", gpu_quota=4),
        handover(("train", 0, [0]), uid="scenario/x/1"),
        msgspec.structs.replace(gang_job("team", 1, name="train"), workload_uid="scenario/x/2"),
    )
    assert a.state.adoptions.awaiting == set()


def test_pods_not_pending_or_not_in_the_group_are_not_awaited():
    a = allocator(
        gpu_nodes(1, 4),
        queue("team", gpu_quota=4),
        gang_job("team", 1, name="train"),
        ev.PodBound(job="train", pod=0, node="node-0", gpus=[0], at=0.0),
        handover(("train", 0, [0]), ("train", 7, [1])),
    )
    assert a.state.adoptions.awaiting == set()


def test_a_deleted_group_is_no_longer_awaited():
    a = allocator(gpu_nodes(1, 4), queue("team", gpu_quota=4), gang_job("team", 1, name="train"))
    a.apply(handover(("train", 0, [0])))
    a.apply(ev.PodGroupDeleted(name="train"))
    assert a.state.adoptions.awaiting == set()


# -- the live allocator ----------------------------------------------------------------------------


class Log:
    """A memory bus read by hand: each reader takes what it has not seen yet."""

    def __init__(self) -> None:
        self.bus = MemoryBus(SUBJECTS)
        self.read_upto: dict[str, int] = {}

    async def publish(self, subject: str, *events: ev.Event) -> None:
        await self.bus.publish(subject, list(events), msg_id=f"test:{len(self.bus.messages)}")

    def news(self, reader: str) -> list[Delivery]:
        start = self.read_upto.get(reader, 0)
        self.read_upto[reader] = len(self.bus.messages)
        return [Delivery(m.subject, m.seq, decode_envelope(m.data)) for m in self.bus.messages[start:]]

    def since(self, seq: int, kind: type) -> list:
        """Events of ``kind`` published after sequence ``seq``."""
        return [e for m in self.bus.messages[seq:] for e in decode_envelope(m.data) if isinstance(e, kind)]


async def test_the_allocator_decides_nothing_until_the_fleet_answers_the_pods_handed_to_it():
    log = Log()
    await log.publish(SUBJECTS.nodes("default"), *gpu_nodes(1, 2), handover(("train", 0, [1])))
    await log.publish(SUBJECTS.queues, queue("team", gpu_quota=2))
    await log.publish(
        SUBJECTS.podgroups, gang_job("team", 1, name="train"), gang_job("team", 1, name="other")
    )
    allocator = AllocatorHandlers(log.bus, SUBJECTS, Allocator(AllocatorConfig()), clock=lambda: 1.0)
    binder = BinderHandlers(log.bus, SUBJECTS, SimFleet(), clock=lambda: 1.0)

    await allocator.handle(log.news("allocator"), live=True)
    assert not await allocator.maybe_cycle(), "a cycle now could place train's running pod a second time"

    await binder.handle(log.news("binder"), live=True)
    await allocator.handle(log.news("allocator"), live=True)
    before = await log.bus.last_seq()
    assert await allocator.maybe_cycle()
    assert [(b.job, b.gpus) for b in log.since(before, ev.BindRequested)] == [("other", [0])]


async def test_an_idle_cycle_that_first_sees_a_gang_below_its_minimum_is_recorded():
    log = Log()
    await log.publish(SUBJECTS.nodes("default"), *gpu_nodes(1, 1))
    await log.publish(SUBJECTS.queues, queue("team", gpu_quota=4))
    await log.publish(SUBJECTS.podgroups, gang_job("team", 3, name="serve"))
    await log.publish(SUBJECTS.pods("default"), ev.PodBound(job="serve", pod=0, node="node-0", gpus=[0]))
    allocator = AllocatorHandlers(log.bus, SUBJECTS, Allocator(AllocatorConfig()), clock=lambda: 1.0)
    await allocator.handle(log.news("allocator"), live=True)
    before = await log.bus.last_seq()
    await allocator.maybe_cycle()
    # The grace is timed from the clock of the first recorded cycle that saw the gang stale.
    assert [c.clock for c in log.since(before, ev.CycleCompleted)] == [1.0]


async def test_the_allocator_cycles_once_more_when_a_min_runtime_runs_out_with_no_news():
    now = [1.0]
    log = Log()
    await log.publish(SUBJECTS.nodes("default"), *gpu_nodes(1, 4))
    await log.publish(SUBJECTS.queues, queue("team-a", gpu_quota=0), queue("team-b", gpu_quota=4))
    young = msgspec.structs.replace(gang_job("team-a", 4, name="young"), min_runtime=5.0)
    await log.publish(SUBJECTS.podgroups, young, gang_job("team-b", 4, name="waiting"))
    await log.publish(
        SUBJECTS.pods("default"),
        *(ev.PodBound(job="young", pod=i, node="node-0", gpus=[i], at=0.0) for i in range(4)),
    )
    allocator = AllocatorHandlers(log.bus, SUBJECTS, Allocator(AllocatorConfig()), clock=lambda: now[0])
    await allocator.handle(log.news("allocator"), live=True)
    await allocator.maybe_cycle()  # young is protected until t=5: nothing to do yet
    await allocator.handle(log.news("allocator"), live=True)
    now[0] = 6.0
    before = await log.bus.last_seq()
    assert await allocator.maybe_cycle(), "with no news, only the end of the wait can bring the reclaim"
    assert {e.job for e in log.since(before, ev.EvictionRequested)} == {"young"}
