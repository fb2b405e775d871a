"""The embedded NATS of a system refuses strangers and holds each user to its subjects."""

from __future__ import annotations

import nats
import pytest
from muster.bus.nats import NatsBus, NatsLoginRefused
from muster.events import BindRequested, WorkloadSubmitted
from muster.runtime.security import NatsCredentials

from tests.security.conftest import SUBJECTS

pytestmark = pytest.mark.nats


def bind_requested() -> BindRequested:
    return BindRequested(job="team-a/j", pod=0, node="node-a", gpus=[0], pool="default", epoch=1, cycle=1)


async def stored(secured, subject: str) -> int:
    bus = await secured.bus("cli")
    try:
        return len([d async for d in bus.read([subject])])
    finally:
        await bus.close()


async def test_a_client_without_credentials_is_refused(secured_nats):
    with pytest.raises(nats.errors.Error, match="Authorization Violation"):
        await nats.connect(
            secured_nats.url, allow_reconnect=False, max_reconnect_attempts=0, connect_timeout=2
        )


async def test_a_wrong_password_is_refused_at_once_not_retried_forever(secured_nats):
    with pytest.raises(NatsLoginRefused, match="refused user 'binder'"):
        await NatsBus.connect(
            secured_nats.url, SUBJECTS, service="test", credentials=NatsCredentials("binder", "not-it")
        )


async def test_the_refusal_does_not_repeat_the_password(secured_nats):
    with pytest.raises(NatsLoginRefused) as refused:
        await NatsBus.connect(
            secured_nats.url, SUBJECTS, service="test", credentials=NatsCredentials("cli", "p4ssw0rd-guess")
        )
    assert "p4ssw0rd-guess" not in str(refused.value)


async def test_a_framework_may_submit_a_workload(secured_nats):
    bus = await secured_nats.bus("framework")
    try:
        event = WorkloadSubmitted(uid="team-a/mnist", manifests=[], submitted_at=0.0)
        seq = await bus.publish(SUBJECTS.workloads, [event], msg_id="submit:team-a/mnist")
    finally:
        await bus.close()
    assert seq > 0


@pytest.mark.parametrize("user", ["framework", "binder", "cli", "nodewatch"])
async def test_no_one_but_the_allocator_may_publish_a_decision(secured_nats, user):
    bus = await secured_nats.bus(user)
    bus.publish_patience = 0.0  # a refused publish is never acknowledged: don't keep resending it
    try:
        with pytest.raises(nats.errors.TimeoutError):
            await bus.publish(SUBJECTS.decisions("default"), [bind_requested()], msg_id=f"forged:{user}")
    finally:
        await bus.close()
    # Refused by the server, so never stored: nothing on this subject is real.
    assert await stored(secured_nats, SUBJECTS.decisions("default")) == 0


async def test_the_allocator_may_publish_a_decision(secured_nats):
    bus = await secured_nats.bus("allocator")
    try:
        seq = await bus.publish(SUBJECTS.decisions("y"), [bind_requested()], msg_id="real:y")
    finally:
        await bus.close()
    assert seq > 0
    assert await stored(secured_nats, SUBJECTS.decisions("y")) == 1


async def test_a_service_consumes_and_acknowledges_with_its_own_permissions(secured_nats):
    import asyncio

    producer = await secured_nats.bus("framework")
    await producer.publish(
        SUBJECTS.workloads,
        [WorkloadSubmitted(uid="t/ack", manifests=[], submitted_at=0.0)],
        msg_id="submit:t/ack",
    )
    await producer.close()
    bus = await secured_nats.bus("podgrouper")
    seen: list[int] = []
    stop = asyncio.Event()

    async def handle(deliveries):
        seen.extend(d.seq for d in deliveries)
        stop.set()

    try:
        await asyncio.wait_for(bus.consume("podgrouper", [SUBJECTS.workloads], handle, stop=stop), 10)
        await bus.nc.flush()
        info = await bus.js.consumer_info(SUBJECTS.stream, "podgrouper")
    finally:
        await bus.close()
    assert seen and info.num_ack_pending == 0
