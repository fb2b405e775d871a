"""A service that starts while the server restarts still finds its snapshots: listing asks again."""

from __future__ import annotations

import pytest
from muster import snapshots
from muster.snapshots import ObjectStoreSnapshots
from nats.errors import TimeoutError as NatsTimeoutError


class RestartingStore:
    """An object store whose server does not answer the first ``silent`` listings."""

    def __init__(self, silent: int):
        self.silent = silent
        self.asked = 0

    async def list(self, ignore_deletes: bool = False) -> list:
        self.asked += 1
        if self.asked <= self.silent:
            raise NatsTimeoutError
        return []


async def test_a_listing_the_restarting_server_does_not_answer_is_asked_again():
    store = RestartingStore(silent=2)
    assert await ObjectStoreSnapshots(store).list("allocator-default") == []
    assert store.asked == 3


async def test_a_server_that_never_answers_is_reported_once_the_patience_is_spent(monkeypatch):
    monkeypatch.setattr(snapshots, "LIST_PATIENCE", 0.5)
    store = RestartingStore(silent=10**6)
    with pytest.raises(NatsTimeoutError):
        await ObjectStoreSnapshots(store).list("allocator-default")
    assert 1 < store.asked < 10
