"""Leader leases in a JetStream key-value bucket, one key per node pool.

The holder renews before ``ttl`` runs out, each write conditional on the
revision it last saw; a standby takes the lease once it has lapsed, or
sooner once it has seen the holder's process gone (``muster.liveness``). Each
new holder gets an epoch above both the lease's last one and the highest
the log has seen (the bucket may have been lost and recreated, the log
never is), which every decision carries: the binder refuses decisions of
older epochs (see ``muster.fencing``), so a deposed leader that still
publishes cannot bind anything.

Expiry is judged by the wall clocks of the processes involved, so hosts
running allocators must keep their clocks in sync (NTP), as with any
lease.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass

import msgspec
from nats.js import JetStreamContext, api
from nats.js.errors import BucketNotFoundError, KeyNotFoundError, KeyWrongLastSequenceError
from nats.js.kv import KeyValue

from muster.fencing import next_epoch
from muster.stream_replicas import stream_replicas
from muster.unanswered import UNANSWERED


class LeaseRecord(msgspec.Struct, frozen=True):
    holder: str
    epoch: int
    expires: float


@dataclass
class Held:
    epoch: int
    revision: int
    previous: str | None


async def lease_bucket(js: JetStreamContext, stream: str) -> KeyValue:
    """The system's lease bucket (created if missing)."""
    name = f"{stream}_LEASES"
    try:
        return await js.key_value(name)
    except BucketNotFoundError:
        return await js.create_key_value(
            api.KeyValueConfig(bucket=name, history=1, replicas=stream_replicas())
        )


class Lease:
    """One pool's lease, as seen by one would-be holder."""

    def __init__(
        self, kv: KeyValue, pool: str, holder: str, ttl: float, clock: Callable[[], float] = time.time
    ):
        self.kv = kv
        self.key = f"pool.{pool}"
        self.holder = holder
        self.ttl = ttl
        self.clock = clock
        self.held: Held | None = None
        self.expires = 0.0
        """When the lease this holder last wrote lapses."""
        self.others_expire: float | None = None
        """When the lease another holder last wrote lapses, as the last look that found it held saw it:
        a standby need not look again before then."""
        self.others_holder: str | None = None
        """Who held the lease at that look."""

    def _value(self, epoch: int) -> bytes:
        self.expires = self.clock() + self.ttl
        return msgspec.json.encode(LeaseRecord(self.holder, epoch, self.expires))

    async def acquire(self, log_epoch: int = 0, *, gone: str | None = None) -> Held | None:
        """Take the lease if nobody holds it (or its holder let it lapse); None if someone does,
        or the server does not answer (it may be restarting).

        ``log_epoch`` is the highest epoch the log has seen for the pool: the epoch taken is
        above it as well as above the lease's last one. ``gone``: a holder known to be dead, whose
        lease is taken before it lapses (if it still holds it: the write is conditional as ever).
        """
        try:
            entry = await self.kv.get(self.key)
        except KeyNotFoundError:
            entry = None
        except UNANSWERED:
            return None
        try:
            if entry is None or entry.value is None:
                epoch = next_epoch(0, log_epoch)
                revision = await self.kv.create(self.key, self._value(epoch))
                self.held = Held(epoch=epoch, revision=revision, previous=None)
                return self.held
            record = msgspec.json.decode(entry.value, type=LeaseRecord)
            if record.holder not in (self.holder, gone) and record.expires > self.clock():
                self.others_expire, self.others_holder = record.expires, record.holder
                return None
            self.others_expire = self.others_holder = None
            epoch = next_epoch(record.epoch, log_epoch)
            revision = await self.kv.update(self.key, self._value(epoch), last=entry.revision)
        except (KeyWrongLastSequenceError, msgspec.DecodeError, *UNANSWERED):
            self.others_expire = self.others_holder = None
            return None  # another standby won the race, the record is unreadable, or no answer: try later
        except Exception as exc:  # create() on an existing key reports it as an API error
            if "wrong last sequence" in str(exc).lower() or "key exists" in str(exc).lower():
                return None
            raise
        self.held = Held(epoch=epoch, revision=revision, previous=record.holder)
        return self.held

    def remaining(self) -> float:
        """Seconds until the lease this holder last wrote lapses (0 or less: it has)."""
        return self.expires - self.clock()

    async def renew(self) -> bool:
        """Extend the lease; False means it was lost (someone else holds a newer epoch), or it
        lapsed while the server did not answer (then nobody can tell who holds it)."""
        if self.held is None:
            return False
        expires = self.expires
        try:
            self.held.revision = await self.kv.update(
                self.key, self._value(self.held.epoch), last=self.held.revision
            )
            return True
        except KeyWrongLastSequenceError:
            self.held = None
            return False
        except UNANSWERED:
            # A server restart is no reason to give up a lease that has not lapsed yet.
            self.expires = expires
            if self.clock() < expires:
                return True
            self.held = None
            return False

    async def release(self) -> None:
        """Let the lease lapse now, so a standby need not wait for the ttl."""
        if self.held is None:
            return
        expired = msgspec.json.encode(LeaseRecord(self.holder, self.held.epoch, 0.0))
        with contextlib.suppress(KeyWrongLastSequenceError):
            await self.kv.update(self.key, expired, last=self.held.revision)
        self.held = None
