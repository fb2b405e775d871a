"""A standby that sees the lease's holder gone takes the lease at once, not when it lapses; a holder
that still answers keeps it until then, however slow it is."""

from __future__ import annotations

import pytest
from muster.lease import Lease

from services.allocator.app import PROBE_EVERY, LeaseSchedule, tend_lease
from tests.unit.allocator.test_lease_schedule import Clock
from tests.unit.lease.test_epochs import Bucket, elections

TTL = 30.0


async def held_by(holder: str, bucket: Bucket, clock: Clock) -> Lease:
    lease = Lease(bucket, "default", holder, TTL, clock=clock)
    assert await lease.acquire() is not None
    return lease


async def test_a_lease_is_taken_before_it_lapses_from_the_holder_named_gone():
    clock, bucket = Clock(), Bucket()
    await held_by("leader", bucket, clock)
    standby = Lease(bucket, "default", "standby", TTL, clock=clock)
    assert await standby.acquire() is None
    assert standby.others_holder == "leader"
    held = await standby.acquire(gone="leader")
    assert held is not None and (held.epoch, held.previous) == (2, "leader")


async def test_naming_another_holder_gone_takes_nothing():
    clock, bucket = Clock(), Bucket()
    await held_by("leader", bucket, clock)
    standby = Lease(bucket, "default", "standby", TTL, clock=clock)
    assert await standby.acquire(gone="someone-else") is None
    assert standby.others_holder == "leader"


async def test_the_deposed_holder_loses_its_next_renewal():
    clock, bucket = Clock(), Bucket()
    leader = await held_by("leader", bucket, clock)
    await Lease(bucket, "default", "standby", TTL, clock=clock).acquire(gone="leader")
    assert not await leader.renew()


async def test_a_standby_asks_about_the_holder_and_takes_over_when_it_is_gone(allocator):
    bus, handlers = allocator
    clock, bucket = Clock(), Bucket()
    await held_by("leader", bucket, clock)
    asked: list[str] = []

    async def gone(holder: str) -> bool:
        asked.append(holder)
        return True

    await tend_lease(handlers, Lease(bucket, "default", "standby", TTL, clock=clock), gone)
    assert asked == ["leader"]
    assert handlers.leader and handlers.epoch == 2
    assert [(e.holder, e.previous) for e in elections(bus)] == [("standby", "leader")]


async def test_a_standby_leaves_a_holder_that_answers_in_place(allocator):
    bus, handlers = allocator
    clock, bucket = Clock(), Bucket()
    await held_by("leader", bucket, clock)

    async def gone(holder: str) -> bool:
        return False

    await tend_lease(handlers, Lease(bucket, "default", "standby", TTL, clock=clock), gone)
    assert not handlers.leader and elections(bus) == []


async def test_a_standby_asks_nobody_when_the_lease_is_free(allocator):
    _, handlers = allocator

    async def gone(holder: str) -> bool:
        raise AssertionError("nobody holds the lease: nobody to ask about")

    await tend_lease(handlers, Lease(Bucket(), "default", "standby", TTL, clock=Clock()), gone)
    assert handlers.leader and handlers.epoch == 1


async def test_a_standby_looks_at_the_holder_every_probe_interval_however_long_the_lease():
    clock, bucket = Clock(), Bucket()
    await held_by("leader", bucket, clock)
    standby = Lease(bucket, "default", "standby", TTL, clock=clock)
    schedule = LeaseSchedule(TTL, monotonic=clock, probe_every=PROBE_EVERY)
    assert await standby.acquire() is None
    schedule.looked(standby, leader=False)
    assert schedule.next_look == pytest.approx(100.0 + PROBE_EVERY)


async def test_a_leader_renews_at_a_third_of_its_ttl_whatever_the_probe_interval():
    clock = Clock()
    lease = await held_by("leader", Bucket(), clock)
    schedule = LeaseSchedule(TTL, monotonic=clock, probe_every=PROBE_EVERY)
    schedule.looked(lease, leader=True)
    assert schedule.next_look == pytest.approx(100.0 + TTL / 3)
