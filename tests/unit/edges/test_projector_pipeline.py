"""The projector's pipeline: one batch commits while the next is prepared, in order, exactly once."""

from __future__ import annotations

import asyncio

import pytest
from muster.bus import Delivery
from muster.events import PodGroupCreated
from muster.store import convert, sink

from services.projector import pipeline as pipeline_module
from services.projector.pipeline import Pipeline


def message(seq: int) -> Delivery:
    return Delivery("muster.podgroups", seq, [PodGroupCreated(name=f"job-{seq}", queue="q")])


class Recorder:
    """A commit that records what it was given and finishes only when told."""

    def __init__(self) -> None:
        self.batches: list[tuple[int, int]] = []
        self.release = asyncio.Event()
        self.fail_at: int | None = None

    async def commit(self, batch) -> int:
        if batch.last == self.fail_at:
            raise RuntimeError("the database said no")
        await self.release.wait()
        self.batches.append((batch.after, batch.last))
        return batch.count


async def test_the_next_batch_is_prepared_while_the_previous_one_commits(monkeypatch):
    prepared: list[int] = []

    def spy(deliveries, after, refused=None):
        prepared.append(max(d.seq for d in deliveries))
        return sink.prepare(deliveries, after, refused)

    monkeypatch.setattr(pipeline_module, "prepare", spy)
    rec = Recorder()
    pipeline = Pipeline(0, rec.commit)
    await pipeline.handle([message(1), message(2)])
    second = asyncio.create_task(pipeline.handle([message(3)]))
    await asyncio.sleep(0.2)
    assert prepared == [2, 3] and rec.batches == []  # batch 3 ready while batch 1-2 still commits
    rec.release.set()
    await second
    await pipeline.drain()
    assert rec.batches == [(0, 2), (2, 3)]


async def test_each_batch_is_prepared_past_where_the_previous_one_ends():
    rec = Recorder()
    rec.release.set()
    pipeline = Pipeline(5, rec.commit)
    await pipeline.handle([message(4), message(5), message(6)])  # 4 and 5 are already projected
    await pipeline.handle([message(6)])  # a redelivery changes nothing
    await pipeline.drain()
    assert rec.batches == [(5, 6)]


async def test_a_failed_commit_surfaces_before_anything_later_is_committed():
    rec = Recorder()
    rec.release.set()
    rec.fail_at = 1
    pipeline = Pipeline(0, rec.commit)
    await pipeline.handle([message(1)])
    with pytest.raises(RuntimeError, match="said no"):
        await pipeline.handle([message(2)])
    await asyncio.sleep(0)
    assert rec.batches == []


async def test_a_refused_message_is_passed_by_the_position_and_projects_nothing():
    # The bus hands a message readers refuse (muster.bus.admission) over with no events.
    refused = Delivery("muster.workloads", 2, [])
    prepared = sink.prepare([message(1), refused, message(3)], 0)
    assert (prepared.last, prepared.count) == (3, 3)
    rows = prepared.plan.appends[convert.INSERT_EVENT]
    assert [row[0] for row in rows] == [1, 3]
    rec = Recorder()
    rec.release.set()
    pipeline = Pipeline(0, rec.commit)
    await pipeline.handle([refused])
    await pipeline.drain()
    assert rec.batches == [(0, 2)]
