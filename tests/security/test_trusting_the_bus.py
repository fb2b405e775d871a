"""Each login, used as an attacker would, against a system's secured NATS.

A login may publish only on its own subjects (test_nats_refusal); here, what it
publishes there can say only what that subject is for, and nobody reads or
writes another user's inbox while every reply still reaches its requester.
"""

from __future__ import annotations

import asyncio

import nats
import pytest
from muster import liveness
from muster.cli.snapshots_cmd import forget
from muster.events import (
    BindRequested,
    LeaderElected,
    NodeRegistered,
    NodeSpec,
    PodBound,
    QueueSpec,
    QueueUpserted,
    Resources,
    WorkloadSubmitted,
    decode_envelope,
)
from muster.fencing import EpochFence
from muster.lease import lease_bucket
from muster.runtime.security import NATS_USERS, inbox_prefix, nats_connect_options
from muster.snapshots import ObjectStoreSnapshots, sealed

from tests.polling import wait_until
from tests.security.conftest import SUBJECTS

pytestmark = pytest.mark.nats


async def raw_client(secured, user: str) -> tuple[nats.NATS, list[str]]:
    """A plain NATS client logged in as ``user``, and the errors the server sends it."""
    errors: list[str] = []

    async def on_error(exc: Exception) -> None:
        errors.append(str(exc))

    options = nats_connect_options(secured.url, secured.login(user))
    nc = await nats.connect(secured.url, error_cb=on_error, allow_reconnect=False, **options)
    return nc, errors


async def refused(nc: nats.NATS, errors: list[str], what: str, patience: float = 5.0) -> bool:
    """Whether the server reports a permissions violation for ``what`` (it reports them asynchronously)."""
    await nc.flush()
    for _ in range(int(patience / 0.05)):
        if any("permissions violation" in e.lower() and what.lower() in e.lower() for e in errors):
            return True
        await asyncio.sleep(0.05)
    return False


async def letters_by(secured, service: str) -> list:
    bus = await secured.bus("cli")
    try:
        found = [
            e for d in [d async for d in bus.read([SUBJECTS.deadletter])] for e in decode_envelope(d.data)
        ]
    finally:
        await bus.close()
    return [e for e in found if e.service == service]


# -- inboxes ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("user", NATS_USERS)
async def test_no_user_may_read_every_inbox(secured_nats, user):
    nc, errors = await raw_client(secured_nats, user)
    try:
        await nc.subscribe("_INBOX.>")
        assert await refused(nc, errors, "Subscription"), errors
    finally:
        await nc.close()


async def test_no_user_may_read_another_users_inbox(secured_nats):
    nc, errors = await raw_client(secured_nats, "framework")
    try:
        await nc.subscribe(f"{inbox_prefix('cli')}.>")
        assert await refused(nc, errors, "Subscription")
    finally:
        await nc.close()


async def test_no_user_may_publish_into_another_users_inbox(secured_nats):
    nc, errors = await raw_client(secured_nats, "agent")
    try:
        await nc.publish(f"{inbox_prefix('binder')}.x.y", b'{"events": []}')
        assert await refused(nc, errors, "Publish")
    finally:
        await nc.close()


@pytest.mark.parametrize("user", NATS_USERS)
async def test_every_user_gets_jetstreams_answers_on_its_own_inbox(secured_nats, user):
    bus = await secured_nats.bus(user)  # connecting asks JetStream about the stream
    try:
        assert bus.nc.new_inbox().startswith(f"{inbox_prefix(user)}.")
        assert await bus.last_seq() >= 0
    finally:
        await bus.close()


async def test_a_service_folds_the_stream_through_its_own_inbox(secured_nats):
    producer = await secured_nats.bus("binder")
    seq = await producer.publish(SUBJECTS.pods("fold"), [PodBound(job="j", pod=0, node="n")], msg_id="fold")
    await producer.close()
    bus = await secured_nats.bus("nodewatch")
    stop, seen = asyncio.Event(), []

    async def handle(deliveries, live):
        seen.extend(d.seq for d in deliveries)
        stop.set()

    try:
        await asyncio.wait_for(bus.fold("nodewatch", [SUBJECTS.pods("fold")], handle, stop=stop), 10)
    finally:
        await bus.close()
    assert seen == [seq]


async def test_the_allocator_keeps_its_lease_through_its_own_inbox(secured_nats):
    bus = await secured_nats.bus("allocator")
    try:
        kv = await lease_bucket(bus.js, SUBJECTS.stream)
        await kv.put("pool-a", b"holder-1")
        assert (await kv.get("pool-a")).value == b"holder-1"
    finally:
        await bus.close()


async def test_an_agent_answers_a_log_request_on_the_requesters_inbox(secured_nats):
    agent, errors = await raw_client(secured_nats, "agent")
    cli, _ = await raw_client(secured_nats, "cli")

    async def answer(msg) -> None:
        await msg.respond(b"log lines")

    try:
        await agent.subscribe(SUBJECTS.agent_logs("node-a"), cb=answer)
        await agent.flush()
        reply = await cli.request(SUBJECTS.agent_logs("node-a"), b"{}", timeout=5)
        assert reply.data == b"log lines" and errors == []
    finally:
        await agent.close()
        await cli.close()


async def test_a_standby_allocator_asks_after_the_leader_under_its_own_login(secured_nats):
    subject = SUBJECTS.alive("default", "a1")
    async with secured_nats.buses("allocator", "allocator") as (leader, standby):
        await liveness.answer_probes(leader.nc, subject)
        await leader.nc.flush()
        await standby.nc.request(subject, b"", timeout=2)  # answered, not merely unrefused
        await leader.close()
        assert await wait_until(lambda: liveness.gone(standby.nc, subject, timeout=2), what="the leader gone")


async def test_the_cli_forgets_an_agents_snapshots_under_its_own_login(secured_nats):
    async with secured_nats.buses("agent", "cli") as (agent, cli):
        store = await ObjectStoreSnapshots.open(agent.js, SUBJECTS.stream, "agent")
        await store.put(*sealed("agent-gpu-7", 10, b"state", digest="d", format=1))
        assert await forget(cli, "agent-gpu-7") == 1
        assert await store.list("agent-gpu-7") == []


# -- event types bound to subjects -----------------------------------------------------------------

FORGED = [
    BindRequested(job="team-a/j", pod=0, node="node-a", gpus=[0], epoch=1),
    PodBound(job="team-a/j", pod=0, node="node-a"),
    QueueUpserted(queue=QueueSpec(name="forged")),
    NodeRegistered(node=NodeSpec(name="forged", resources=Resources(gpu=1000))),
]


async def test_facts_a_framework_forges_on_its_submissions_reach_nobody(secured_nats):
    framework = await secured_nats.bus("framework")
    real = WorkloadSubmitted(uid="team-a/real", manifests=[])
    await framework.publish(SUBJECTS.workloads, [real], msg_id="real")
    forged = [
        await framework.publish(SUBJECTS.workloads, [event], msg_id=f"forged-{i}")
        for i, event in enumerate(FORGED)
    ]
    await framework.close()
    bus = await secured_nats.bus("podgrouper")
    stop, handled = asyncio.Event(), []

    async def handle(deliveries):
        handled.extend(e for d in deliveries for e in d.events)

    consumer = asyncio.create_task(bus.consume("podgrouper", [SUBJECTS.workloads], handle, stop=stop))
    try:
        while len(await letters_by(secured_nats, "podgrouper")) < len(forged):
            assert not consumer.done(), consumer
            await asyncio.sleep(0.1)
    finally:
        stop.set()
        await consumer
        await bus.close()
    assert handled == [real]
    letters = await letters_by(secured_nats, "podgrouper")
    assert sorted(letter.stream_seq for letter in letters) == forged
    for letter, event in zip(sorted(letters, key=lambda x: x.stream_seq), FORGED, strict=True):
        assert f"a {type(event).__name__} may not travel on {SUBJECTS.workloads}" in letter.error


@pytest.mark.parametrize("epoch", [500, 2**62])
async def test_a_leader_an_agent_announces_on_a_pods_subject_fences_nothing(secured_nats, epoch):
    pool = f"fence-{epoch}"
    agent = await secured_nats.bus("agent")
    await agent.publish(
        SUBJECTS.pods(pool), [LeaderElected(pool=pool, epoch=epoch, holder="agent")], msg_id=f"leader-{epoch}"
    )
    unasked = BindRequested(job="team-a/j", pod=0, node="node-a", pool=pool, epoch=epoch)
    await agent.publish(SUBJECTS.pods(pool), [unasked], msg_id=f"unasked-{epoch}")
    await agent.close()
    allocator = await secured_nats.bus("allocator")
    decided = BindRequested(job="team-b/k", pod=0, node="node-b", pool=pool, epoch=1)
    await allocator.publish(
        SUBJECTS.decisions(pool),
        [LeaderElected(pool=pool, epoch=1, holder="allocator-0"), decided],
        msg_id=f"decided-{epoch}",
    )
    await allocator.close()

    bus = await secured_nats.bus("binder")
    fence, admitted, stop = EpochFence(), [], asyncio.Event()

    async def handle(deliveries, live):
        admitted.extend(e for d in deliveries for e in d.events if fence.admit(e))

    async def caught_up():
        stop.set()

    subjects = [SUBJECTS.pods(pool), SUBJECTS.decisions(pool)]
    try:
        await asyncio.wait_for(
            bus.fold(f"binder-{epoch}", subjects, handle, stop=stop, on_caught_up=caught_up), 10
        )
    finally:
        await bus.close()
    assert admitted[-1] == decided and fence.current(pool) == 1
    assert not any(isinstance(e, BindRequested) and e.job == "team-a/j" for e in admitted)
