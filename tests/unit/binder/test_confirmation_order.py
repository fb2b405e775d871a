"""The binder publishes its confirmations in the order its fleet made them."""

from __future__ import annotations

import asyncio

from muster import events as ev
from muster.bus import Delivery
from muster.fleet.sim import SimFleet
from muster.subjects import Subjects

from services.binder.handlers import BinderHandlers


class SlowFirstPublish:
    """A bus whose first publish is held until released, as one waiting out a server restart is."""

    def __init__(self):
        self.subjects = Subjects("t")
        self.release = asyncio.Event()
        self.published: list[list[ev.Event]] = []
        self.calls = 0

    async def publish(self, subject, events, *, msg_id, context=None) -> int:
        self.calls += 1
        if self.calls == 1:
            await self.release.wait()
        self.published.append(list(events))
        return len(self.published)


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def delivery(seq: int, *events: ev.Event) -> Delivery:
    return Delivery(subject="t.decisions.default", seq=seq, events=list(events), headers={})


async def test_a_completion_found_due_while_a_bind_is_still_being_published_goes_out_after_it():
    bus, clock = SlowFirstPublish(), Clock()
    handlers = BinderHandlers(bus, bus.subjects, SimFleet(), clock=clock)
    node = ev.NodeSpec(name="n", resources=ev.Resources(gpu=1, cpu=1000, memory=2**30))
    job = ev.PodGroupCreated(
        name="a", queue="q", pods=[ev.PodSpec(resources=ev.Resources(gpu=1))], duration=0.5
    )
    await handlers.handle([delivery(1, ev.NodeRegistered(node=node), job)], live=False)
    await handlers.rebuilt()

    binding = asyncio.create_task(
        handlers.handle([delivery(2, ev.BindRequested(job="a", pod=0, node="n", gpus=[0]))], live=True)
    )
    while bus.calls == 0:  # the bind's confirmation is on its way, and held
        await asyncio.sleep(0)
    clock.now = 1.0  # the pod's run time is over before the PodBound is stored
    ticking = asyncio.create_task(handlers.tick())
    await asyncio.sleep(0.01)
    bus.release.set()
    await asyncio.gather(binding, ticking)

    kinds = [type(e).__name__ for message in bus.published for e in message]
    assert kinds == ["PodBound", "PodCompleted"]
