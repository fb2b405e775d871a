"""The reader of stretches of the log (``NatsBus.read``) on one subject: filtered by the server.

It is what a tenant's client reads its answers with, so it must end without asking the stream
where its end is: at what its consumer had to deliver when made, or at ``end_seq``.
"""

from __future__ import annotations

import pytest
from muster.events import PodBound, PodGroupDeleted

pytestmark = [pytest.mark.nats]


async def publish(bus, subject: str, event, msg_id: str) -> int:
    return await bus.publish(subject, [event], msg_id=msg_id)


async def test_a_read_of_one_subject_yields_its_messages_only_in_order(nats_bus):
    s = nats_bus.subjects
    mine = [await publish(nats_bus, s.podgroups, PodGroupDeleted(name=f"j{i}"), f"g{i}") for i in range(3)]
    await publish(nats_bus, s.pods("default"), PodBound(job="j0", pod=0, node="n"), "p0")
    read = [(d.seq, d.subject) async for d in nats_bus.read([s.podgroups])]
    assert read == [(seq, s.podgroups) for seq in mine]


async def test_a_read_of_a_subject_without_messages_ends_at_once(nats_bus):
    s = nats_bus.subjects
    await publish(nats_bus, s.podgroups, PodGroupDeleted(name="j"), "g")
    assert [d async for d in nats_bus.read([s.answers("team-a")])] == []


async def test_a_read_stops_at_its_end_seq_though_the_subject_goes_on(nats_bus):
    s = nats_bus.subjects
    seqs = [await publish(nats_bus, s.podgroups, PodGroupDeleted(name=f"j{i}"), f"g{i}") for i in range(3)]
    read = [d.seq async for d in nats_bus.read([s.podgroups], start_seq=seqs[1], end_seq=seqs[1])]
    assert read == [seqs[1]]


async def test_a_read_from_past_the_subjects_last_message_yields_nothing(nats_bus):
    s = nats_bus.subjects
    last = await publish(nats_bus, s.podgroups, PodGroupDeleted(name="j"), "g")
    await publish(nats_bus, s.pods("default"), PodBound(job="j", pod=0, node="n"), "p")
    assert [d async for d in nats_bus.read([s.podgroups], start_seq=last + 1)] == []
