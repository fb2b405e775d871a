"""When an allocator looks at its lease: a standby right after a held lease lapses, a leader before a
cycle once part of its lease is used up. Who may hold the lease, and from when, does not change."""

from __future__ import annotations

import asyncio

import pytest
from muster.bus import Delivery, MemoryBus
from muster.lease import Lease
from muster.scheduler.config import AllocatorConfig
from muster.scheduler.engine import Allocator
from muster.subjects import Subjects

from services.allocator.app import LOOK_AFTER_EXPIRY, LeaseSchedule
from services.allocator.handlers import AllocatorHandlers
from tests.unit.allocator.builders import gpu_nodes
from tests.unit.lease.test_epochs import Bucket

TTL = 1.5


class Clock:
    """One clock for wall and monotonic time: the test moves it."""

    def __init__(self, now: float = 100.0):
        self.now = now

    def __call__(self) -> float:
        return self.now


async def test_a_standby_that_found_the_lease_held_looks_again_right_after_it_lapses():
    clock, bucket = Clock(), Bucket()
    leader = Lease(bucket, "default", "leader", TTL, clock=clock)
    await leader.acquire()  # lapses at 101.5 unless renewed
    clock.now = 100.9
    standby = Lease(bucket, "default", "standby", TTL, clock=clock)
    schedule = LeaseSchedule(TTL, monotonic=clock)
    assert await standby.acquire() is None
    schedule.looked(standby, leader=False)
    assert schedule.next_look == pytest.approx(100.9 + TTL / 3)  # 101.4: before the lapse, look as ever
    clock.now = schedule.next_look
    assert await standby.acquire() is None
    schedule.looked(standby, leader=False)

    # the leader died without renewing: the next look comes right after 101.5, not at 101.9
    assert schedule.next_look == pytest.approx(101.5 + LOOK_AFTER_EXPIRY)
    clock.now = 101.5
    assert not schedule.due()
    clock.now = schedule.next_look
    assert schedule.due()
    held = await standby.acquire()
    assert held is not None and (held.epoch, held.previous) == (2, "leader")


async def test_a_standby_never_waits_longer_than_a_third_of_the_ttl_between_looks():
    clock, bucket = Clock(), Bucket()
    await Lease(bucket, "default", "leader", TTL, clock=clock).acquire()
    standby = Lease(bucket, "default", "standby", TTL, clock=clock)
    schedule = LeaseSchedule(TTL, monotonic=clock)
    assert await standby.acquire() is None  # just renewed: a whole ttl to go
    schedule.looked(standby, leader=False)
    assert schedule.next_look == 100.0 + TTL / 3


async def test_a_standby_still_takes_no_lease_before_it_lapses():
    clock, bucket = Clock(), Bucket()
    await Lease(bucket, "default", "leader", TTL, clock=clock).acquire()
    standby = Lease(bucket, "default", "standby", TTL, clock=clock)
    clock.now = 101.49
    assert await standby.acquire() is None


async def test_a_leader_renews_before_a_cycle_once_a_tenth_of_its_lease_is_used_up():
    clock = Clock()
    lease = Lease(Bucket(), "default", "leader", TTL, clock=clock)
    schedule = LeaseSchedule(TTL, monotonic=clock)
    await lease.acquire()
    schedule.looked(lease, leader=True)
    assert not schedule.renew_first(lease)
    clock.now += 0.2  # 1.3 s of 1.5 left: a long cycle now could outlast the lease
    assert schedule.renew_first(lease)
    assert await lease.renew()
    assert not schedule.renew_first(lease) and lease.remaining() == TTL


async def test_folding_a_long_batch_lets_the_lease_loop_run_between_messages():
    bus = MemoryBus(Subjects("t"))
    handlers = AllocatorHandlers(
        bus, bus.subjects, Allocator(AllocatorConfig(), frozenset({"default"})), clock=lambda: 100.0
    )
    handlers.fold_slice = 0.0  # give way after every message
    batch = [Delivery("t.nodes.default", seq, [node]) for seq, node in enumerate(gpu_nodes(5, gpus=8), 1)]
    seen: list[int] = []

    async def lease_loop() -> None:
        seen.append(handlers.applied_seq)

    looking = asyncio.create_task(lease_loop())
    await handlers.handle(batch, live=True)
    await looking
    assert seen and 1 <= seen[0] < 5  # it ran in the middle of the batch, not after it
    assert handlers.applied_seq == 5
