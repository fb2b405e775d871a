"""A bind refused for a stale epoch is never silent: it is counted, and the binder's log says so."""

from __future__ import annotations

import logging

from muster import events as ev
from muster.bus import Delivery
from muster.fleet.sim import SimFleet
from muster.health import Metrics
from muster.subjects import Subjects

from services.binder.handlers import BinderHandlers


class Collecting:
    def __init__(self):
        self.subjects = Subjects("t")
        self.published: list[ev.Event] = []

    async def publish(self, subject, events, *, msg_id, context=None) -> int:
        self.published.extend(events)
        return len(self.published)


def delivery(seq: int, *events: ev.Event) -> Delivery:
    return Delivery(subject="t.decisions.default", seq=seq, events=list(events), headers={})


def bind(pod: int, epoch: int) -> ev.BindRequested:
    return ev.BindRequested(job="a", pod=pod, node="n", gpus=[pod], epoch=epoch)


async def binder_at_epoch(epoch: int) -> tuple[BinderHandlers, Collecting, Metrics]:
    bus, metrics = Collecting(), Metrics("binder")
    handlers = BinderHandlers(bus, bus.subjects, SimFleet(), clock=lambda: 0.0, metrics=metrics)
    node = ev.NodeSpec(name="n", resources=ev.Resources(gpu=8, cpu=8000, memory=2**34))
    job = ev.PodGroupCreated(name="a", queue="q", pods=[ev.PodSpec(count=8, resources=ev.Resources(gpu=1))])
    elected = ev.LeaderElected(epoch=epoch, holder="leader")
    await handlers.handle([delivery(1, ev.NodeRegistered(node=node), job, elected)], live=False)
    await handlers.rebuilt()
    return handlers, bus, metrics


def rejected_total(metrics: Metrics) -> float:
    return metrics.registry.get_sample_value("muster_binds_rejected_total", {"pool": "default"}) or 0.0


async def test_stale_binds_are_counted_and_warned_about(caplog):
    handlers, bus, metrics = await binder_at_epoch(5)
    with caplog.at_level(logging.WARNING, logger="services.binder.handlers"):
        await handlers.handle([delivery(2, bind(0, epoch=1), bind(1, epoch=1))], live=True)
    assert [type(e) for e in bus.published] == [ev.BindRejected, ev.BindRejected]
    assert rejected_total(metrics) == 2
    (line,) = [r.getMessage() for r in caplog.records]
    assert "epoch 1" in line and "epoch 5" in line


async def test_a_storm_of_rejections_is_told_without_a_line_per_bind(caplog):
    handlers, _, metrics = await binder_at_epoch(5)
    with caplog.at_level(logging.WARNING, logger="services.binder.handlers"):
        for seq in range(2, 102):
            await handlers.handle([delivery(seq, bind(seq % 8, epoch=1))], live=True)
    assert rejected_total(metrics) == 100
    assert 1 < len(caplog.records) < 10


async def test_binds_of_the_current_epoch_are_not_refused(caplog):
    handlers, bus, metrics = await binder_at_epoch(5)
    with caplog.at_level(logging.WARNING, logger="services.binder.handlers"):
        await handlers.handle([delivery(2, bind(0, epoch=5))], live=True)
    assert [type(e) for e in bus.published] == [ev.PodBound]
    assert rejected_total(metrics) == 0 and not caplog.records


async def test_an_election_absurdly_far_above_the_pool_is_ignored_and_warned_about(caplog):
    handlers, bus, _ = await binder_at_epoch(5)
    forged = ev.LeaderElected(epoch=2**62, holder="forger")
    with caplog.at_level(logging.WARNING, logger="services.binder.handlers"):
        await handlers.handle([delivery(2, forged), delivery(3, bind(0, epoch=5))], live=True)
    assert [type(e) for e in bus.published] == [ev.PodBound]
    assert any("forger" in r.getMessage() for r in caplog.records)
