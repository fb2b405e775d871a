"""A new leader's epoch is above both its lease's last one and every epoch the log has seen."""

from __future__ import annotations

from types import SimpleNamespace

from muster import events as ev
from muster.bus import Delivery, MemoryBus
from muster.fencing import MAX_EPOCH_STEP, EpochFence, next_epoch
from muster.lease import Lease
from nats.js.errors import KeyNotFoundError, KeyWrongLastSequenceError

from services.allocator.app import tend_lease
from services.allocator.handlers import AllocatorHandlers


class Bucket:
    """A key-value bucket with conditional writes, which can be wiped as a lost bucket is recreated."""

    def __init__(self):
        self.entries: dict[str, tuple[bytes, int]] = {}
        self.revision = 0

    async def get(self, key):
        if key not in self.entries:
            raise KeyNotFoundError
        value, revision = self.entries[key]
        return SimpleNamespace(value=value, revision=revision)

    async def create(self, key, value):
        if key in self.entries:
            raise Exception("wrong last sequence: key exists")
        return self._write(key, value)

    async def update(self, key, value, last):
        if key not in self.entries or self.entries[key][1] != last:
            raise KeyWrongLastSequenceError
        return self._write(key, value)

    def _write(self, key, value) -> int:
        self.revision += 1
        self.entries[key] = (value, self.revision)
        return self.revision

    def wipe(self) -> None:
        self.entries.clear()


def elected(epoch: int, holder: str = "old", pool: str = "default") -> ev.LeaderElected:
    return ev.LeaderElected(pool=pool, epoch=epoch, holder=holder)


# -- the arithmetic ------------------------------------------------------------------------------


def test_the_next_epoch_is_above_the_lease_when_the_lease_is_ahead_of_the_log():
    assert next_epoch(lease_epoch=7, log_epoch=5) == 8


def test_the_next_epoch_is_above_the_log_when_the_lease_starts_again_from_nothing():
    assert next_epoch(lease_epoch=0, log_epoch=5) == 6


def test_a_lease_record_absurdly_far_above_the_log_is_not_followed():
    assert next_epoch(lease_epoch=2**62, log_epoch=5) == 5 + MAX_EPOCH_STEP


# -- the lease -----------------------------------------------------------------------------------


async def test_a_wiped_and_recreated_bucket_elects_above_the_log_not_at_one():
    bucket = Bucket()
    first = Lease(bucket, "default", "a", ttl=5.0, clock=lambda: 100.0)
    assert (await first.acquire(log_epoch=0)).epoch == 1
    bucket.wipe()
    successor = Lease(bucket, "default", "b", ttl=5.0, clock=lambda: 100.0)
    held = await successor.acquire(log_epoch=5)
    assert held.epoch == 6


async def test_a_lapsed_lease_behind_the_log_is_taken_above_the_log():
    bucket = Bucket()
    now = [100.0]
    await Lease(bucket, "default", "a", ttl=5.0, clock=lambda: now[0]).acquire(log_epoch=2)
    now[0] += 10
    held = await Lease(bucket, "default", "b", ttl=5.0, clock=lambda: now[0]).acquire(log_epoch=9)
    assert (held.epoch, held.previous) == (10, "a")


# -- the fence -----------------------------------------------------------------------------------


def test_an_election_absurdly_far_above_the_pool_does_not_move_the_fence():
    fence = EpochFence()
    fence.admit(elected(3))
    assert fence.admit(elected(2**62, holder="forger")) is False
    assert fence.current("default") == 3 and fence.refused == 1
    fresh = ev.BindRequested(job="j", pod=0, node="n", epoch=3)
    assert not fence.is_stale(fresh) and fence.admit(fresh)


def test_every_election_a_lease_can_make_moves_the_fence():
    fence = EpochFence()
    fence.admit(elected(5))
    epoch = next_epoch(lease_epoch=2**62, log_epoch=5)
    assert fence.admit(elected(epoch, holder="new")) is True
    assert fence.current("default") == epoch and fence.refused == 0


# -- the allocator's lease loop ------------------------------------------------------------------


async def read_back(bus: MemoryBus, handlers: AllocatorHandlers, *events: ev.Event) -> None:
    """Fold what the bus holds past what the handlers have read, plus ``events`` as a new message."""
    if events:
        await bus.publish(bus.subjects.decisions("default"), list(events), msg_id=f"test:{len(bus.messages)}")
    for message in bus.messages[handlers.applied_seq :]:
        events_read = ev.decode_envelope(message.data)
        await handlers.handle([Delivery(message.subject, message.seq, events_read)], live=True)


def elections(bus: MemoryBus) -> list[ev.LeaderElected]:
    return [e for m in bus.messages for e in ev.decode_envelope(m.data) if isinstance(e, ev.LeaderElected)]


async def test_an_allocator_on_a_fresh_bucket_is_elected_above_the_epoch_its_log_holds(allocator):
    bus, handlers = allocator
    await read_back(bus, handlers, elected(5))
    await tend_lease(handlers, Lease(Bucket(), "default", "me", ttl=5.0, clock=lambda: 100.0))
    assert handlers.leader and handlers.epoch == 6
    assert [(e.epoch, e.holder) for e in elections(bus)][-1] == (6, "me")


async def test_a_leader_the_log_has_moved_past_stands_down_then_takes_its_lease_above_it(allocator):
    bus, handlers = allocator
    lease = Lease(Bucket(), "default", "me", ttl=5.0, clock=lambda: 100.0)
    await tend_lease(handlers, lease)
    await read_back(bus, handlers)
    assert handlers.epoch == 1
    await read_back(bus, handlers, elected(3, holder="elsewhere"))

    await tend_lease(handlers, lease)
    assert not handlers.leader
    await tend_lease(handlers, lease)
    assert handlers.leader and handlers.epoch == 4
