"""The binder's fleet refuses a node's word about a pod that its state refutes, and says so once."""

from __future__ import annotations

from muster import events as ev
from muster.bus import Delivery
from muster.bus.memory import MemoryBus
from muster.events import decode_envelope
from muster.fleet.sim import SimFleet
from muster.subjects import Subjects

from services.binder import snapshot as codec
from services.binder.handlers import BinderHandlers

S = Subjects("t")
NODE = ev.NodeSpec(name="n", resources=ev.Resources(gpu=2, cpu=8000, memory=2**34))
JOB = ev.PodGroupCreated(name="a", queue="q", pods=[ev.PodSpec(count=2, resources=ev.Resources(gpu=1))])


def delivery(seq: int, *events: ev.Event) -> Delivery:
    return Delivery(subject="t.pods.default", seq=seq, events=list(events), headers={}, data=b"{}")


async def binder() -> tuple[BinderHandlers, MemoryBus]:
    bus = MemoryBus(S)
    handlers = BinderHandlers(bus, S, SimFleet(), clock=lambda: 0.0)
    await handlers.handle([delivery(1, ev.NodeRegistered(node=NODE), JOB)], live=False)
    return handlers, bus


def letters(bus: MemoryBus) -> list[ev.DeadLettered]:
    return [e for m in bus.messages if m.subject == S.deadletter for e in decode_envelope(m.data)]


async def test_a_bind_onto_a_device_the_node_lacks_is_dead_lettered_once_and_occupies_nothing():
    handlers, bus = await binder()
    forged = ev.PodBound(job="a", pod=0, node="n", gpus=[5], at=1.0)
    await handlers.handle([delivery(2, forged)], live=True)
    [letter] = letters(bus)
    assert (letter.service, letter.stream_seq) == ("binder", 2)
    assert letter.error == "pod a/0: device 5 is past the last of node n's 2 GPUs"
    assert handlers.fleet.bound() == []


async def test_a_refusal_met_again_while_the_history_is_read_is_not_lettered_again():
    handlers, bus = await binder()
    await handlers.handle([delivery(2, ev.PodBound(job="a", pod=0, node="x", gpus=[0], at=1.0))], live=False)
    assert letters(bus) == [] and handlers.fleet.bound() == []


async def test_another_nodes_word_that_a_running_pod_ended_leaves_it_running():
    handlers, _ = await binder()
    await handlers.handle([delivery(2, ev.PodBound(job="a", pod=0, node="n", gpus=[0], at=1.0))], live=False)
    await handlers.handle([delivery(3, ev.PodCompleted(job="a", pod=0, node="other"))], live=False)
    assert [(p.job, p.pod, p.node) for p in handlers.fleet.bound()] == [("a", 0, "n")]


async def test_a_registered_nodes_word_that_a_pod_it_never_ran_ended_is_lettered_and_the_pod_still_binds():
    handlers, bus = await binder()
    await handlers.handle([delivery(2, ev.PodCompleted(job="a", pod=1, node="n"))], live=True)
    assert [e.error for e in letters(bus)] == ["pod a/1 is not running on node n"]
    await handlers.handle(
        [delivery(3, ev.BindRequested(job="a", pod=1, node="n", gpus=[1], epoch=0))], live=True
    )
    assert [(p.job, p.pod, p.node) for p in handlers.fleet.bound()] == [("a", 1, "n")]


async def test_a_registered_nodes_word_that_a_pod_running_on_another_ended_is_lettered():
    handlers, bus = await binder()
    other = ev.NodeSpec(name="m", resources=NODE.resources)
    await handlers.handle(
        [delivery(2, ev.NodeRegistered(node=other), ev.PodBound(job="a", pod=0, node="n", gpus=[0], at=1.0))],
        live=False,
    )
    await handlers.handle([delivery(3, ev.PodFailed(job="a", pod=0, node="m"))], live=True)
    assert [e.error for e in letters(bus)] == ["pod a/0 is not running on node m"]
    assert [(p.job, p.pod, p.node) for p in handlers.fleet.bound()] == [("a", 0, "n")]


async def test_the_fleets_own_completion_read_back_after_a_restore_is_taken():
    bus = MemoryBus(S)
    handlers = BinderHandlers(bus, S, SimFleet(), clock=lambda: 100.0)
    timed = ev.PodGroupCreated(
        name="a", queue="q", pods=[ev.PodSpec(count=1, resources=ev.Resources(gpu=1))], duration=5.0
    )
    bound = ev.PodBound(job="a", pod=0, node="n", gpus=[0], at=1.0)
    await handlers.handle([delivery(1, ev.NodeRegistered(node=NODE), timed), delivery(2, bound)], live=False)
    [completed] = handlers.fleet.step(100.0)
    restored = BinderHandlers(bus, S, SimFleet(), clock=lambda: 100.0)
    codec.restore_image(restored, codec.image_of(handlers).data)
    await restored.handle([delivery(3, completed)], live=True)
    assert letters(bus) == [] and restored.fleet._finished == {"a": {0}}
