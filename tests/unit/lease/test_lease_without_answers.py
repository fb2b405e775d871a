"""A lease holder keeps its lease through a server that does not answer, until the lease lapses."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from muster.lease import Lease
from nats.errors import TimeoutError as NatsTimeoutError
from nats.js.errors import KeyNotFoundError


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class FlakyKV:
    """A key-value bucket that stops answering when told to."""

    def __init__(self):
        self.value: bytes | None = None
        self.revision = 0
        self.answering = True

    def _answer(self):
        if not self.answering:
            raise NatsTimeoutError

    async def get(self, key):
        self._answer()
        if self.value is None:
            raise KeyNotFoundError
        return SimpleNamespace(value=self.value, revision=self.revision)

    async def create(self, key, value):
        self._answer()
        self.value, self.revision = value, self.revision + 1
        return self.revision

    async def update(self, key, value, last):
        self._answer()
        self.value, self.revision = value, self.revision + 1
        return self.revision


@pytest.fixture
def held():
    kv, clock = FlakyKV(), Clock()
    return kv, clock, Lease(kv, "default", "me", ttl=5.0, clock=clock)


async def test_a_renewal_the_server_does_not_answer_keeps_a_lease_that_has_not_lapsed(held):
    kv, clock, lease = held
    assert (await lease.acquire()).epoch == 1
    kv.answering = False
    clock.now += 3.0
    assert await lease.renew() is True
    assert lease.held is not None


async def test_a_lease_that_lapses_while_the_server_does_not_answer_is_given_up(held):
    kv, clock, lease = held
    await lease.acquire()
    kv.answering = False
    clock.now += 3.0
    assert await lease.renew() is True  # an unanswered renewal does not extend the lease
    clock.now += 2.5
    assert await lease.renew() is False
    assert lease.held is None


async def test_taking_a_lease_from_a_server_that_does_not_answer_takes_nothing(held):
    kv, _, lease = held
    kv.answering = False
    assert await lease.acquire() is None
    kv.answering = True
    assert (await lease.acquire()).epoch == 1
