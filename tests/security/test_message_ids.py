"""Message ids as an attacker uses them: a tenant publishing first under an id another client will use.

JetStream drops a message whose id the stream already holds, from whoever it
came. A client that took that answer for success would report a submission
that never happened; muster's client refuses it, and keys its ids so that no
other tenant can compute them in advance.
"""

from __future__ import annotations

import time
from types import SimpleNamespace

import pytest
from muster import sdk
from muster.bus import DuplicateMessage, NatsBus, OnDuplicate
from muster.events import PodGroupCreated, PodGroupDeleted, WorkloadSubmitted
from muster.runtime.settings import Endpoints
from muster.sdk import CancelError, Client, SubmitError, message_id, workload_uid
from muster.tenants import TenantLogin
from nats.errors import TimeoutError as NatsTimeoutError

from tests.security import test_tenants
from tests.security.conftest import SUBJECTS, LoginsServer
from tests.security.test_tenants import TENANTS

pytestmark = pytest.mark.nats

secured = test_tenants.secured
"""The tenants' module's server: the system's logins and two tenants, one the attacker."""

VICTIM, ATTACKER = TENANTS
MANIFESTS = [{"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "mnist"}, "spec": {}}]


def login(tenant) -> TenantLogin:
    return TenantLogin(tenant.name, tenant.queues, tenant.user, tenant.password)


async def client_of(secured: LoginsServer, who: str) -> Client:
    """A client as ``Client.connect`` makes it: a tenant's login and id key, or the CLI's."""
    bus = await secured.bus(who)
    bus.publish_patience = 5.0  # a lost acknowledgement is resent, as in real use
    tenant = next((t for t in TENANTS if t.name == who), None)
    endpoints = Endpoints(nats_url=secured.server.url, pg_dsn="")
    return Client(
        bus,
        endpoints,
        login(tenant) if tenant else None,
        id_key=secured.login(who).password,
    )


async def submissions(secured: LoginsServer, subject: str, uid: str) -> list[WorkloadSubmitted]:
    bus = await secured.bus("cli")
    try:
        return [
            e
            async for d in bus.read([subject])
            for e in d.events
            if isinstance(e, WorkloadSubmitted) and e.uid == uid
        ]
    finally:
        await bus.close()


async def squat(secured: LoginsServer, msg_id: str, uid: str = "squat") -> None:
    """The attacker publishes first, on its own queue's subject, under ``msg_id``."""
    bus = await secured.bus(ATTACKER.name)
    try:
        subject = SUBJECTS.tenant_workloads(ATTACKER.name, ATTACKER.queues[0])
        await bus.publish(subject, [WorkloadSubmitted(uid=uid, manifests=[])], msg_id=msg_id)
    finally:
        await bus.close()


def lose_first_ack(bus: NatsBus, *, stored: bool) -> None:
    """The first publish gets no acknowledgement (a server restart); ``stored``: it reached the stream."""
    real, attempts = bus.js.publish, []

    async def publish(*args, **kwargs):
        attempts.append(args)
        if len(attempts) > 1:
            return await real(*args, **kwargs)
        if stored:
            await real(*args, **kwargs)
        raise NatsTimeoutError

    bus.js.publish = publish


async def test_a_tenants_submission_is_stored_though_another_tenant_used_the_id_it_could_predict(secured):
    uid = workload_uid(MANIFESTS)
    # Every id the attacker can derive from the workload alone: the plain ones, with the victim's
    # name where a client puts it.
    for guessed in (f"submit:{uid}", f"submit:{VICTIM.name}:{uid}", f"tenant/{VICTIM.name}/submit:{uid}"):
        await squat(secured, guessed)
    client = await client_of(secured, VICTIM.name)
    try:
        assert await client.submit(MANIFESTS) == uid
    finally:
        await client.close()
    subject = SUBJECTS.tenant_workloads(VICTIM.name, VICTIM.queues[0])
    assert [s.manifests for s in await submissions(secured, subject, uid)] == [MANIFESTS]


async def test_a_submission_whose_id_is_already_taken_is_an_error_not_a_success(secured):
    uid = "taken/mnist"
    # Had the attacker the victim's id (its key leaked), the victim would hear of it.
    await squat(secured, message_id(f"submit:{uid}", VICTIM.password, tenant=VICTIM.name))
    client = await client_of(secured, VICTIM.name)
    try:
        with pytest.raises(SubmitError, match=f"{uid} was not submitted: .*already names message"):
            await client.submit(MANIFESTS, uid=uid)
    finally:
        await client.close()
    assert await submissions(secured, SUBJECTS.tenant_workloads(VICTIM.name, "qa"), uid) == []


async def test_submitting_the_same_workload_twice_is_reported_not_silently_dropped(secured):
    client = await client_of(secured, VICTIM.name)
    try:
        await client.submit(MANIFESTS, uid="twice")
        with pytest.raises(SubmitError, match="an earlier submission of this very workload"):
            await client.submit(MANIFESTS, uid="twice")
    finally:
        await client.close()


async def test_a_tenants_ids_are_its_own_namespace_and_unknown_without_its_key():
    mine = message_id("submit:w", VICTIM.password, tenant=VICTIM.name)
    assert mine.startswith(f"tenant/{VICTIM.name}/submit:w/")
    assert mine == message_id("submit:w", VICTIM.password, tenant=VICTIM.name)  # a retry's is the same
    assert mine != message_id("submit:w", ATTACKER.password, tenant=VICTIM.name)
    assert message_id("submit:w", ATTACKER.password, tenant=ATTACKER.name).startswith(
        f"tenant/{ATTACKER.name}/"
    )


async def test_a_resent_submission_whose_first_attempt_was_stored_is_a_success(secured):
    client = await client_of(secured, VICTIM.name)
    lose_first_ack(client.bus, stored=True)
    try:
        await client.submit(MANIFESTS, uid="resent")
    finally:
        await client.close()
    assert len(await submissions(secured, SUBJECTS.tenant_workloads(VICTIM.name, "qa"), "resent")) == 1


async def test_a_resend_answered_by_someone_elses_message_under_the_id_is_an_error(secured):
    msg_id = "resent-but-squatted"
    await squat(secured, msg_id)
    bus = await secured.bus(VICTIM.name)
    bus.publish_patience = 5.0
    lose_first_ack(bus, stored=False)
    try:
        with pytest.raises(DuplicateMessage):
            await bus.publish(
                SUBJECTS.tenant_workloads(VICTIM.name, "qa"),
                [WorkloadSubmitted(uid="mine", manifests=[])],
                msg_id=msg_id,
                on_duplicate=OnDuplicate.NEW,
            )
    finally:
        await bus.close()


async def test_a_tenants_cancel_whose_id_is_taken_is_an_error(secured, monkeypatch):
    # The attacker predicted the clock too: the cancel's id is then all it needs.
    clock = SimpleNamespace(time_ns=lambda: 7, time=time.time, monotonic=time.monotonic)
    monkeypatch.setattr(sdk, "time", clock)
    await squat(secured, message_id("cancel:job-1:7", VICTIM.password, tenant=VICTIM.name))
    client = await client_of(secured, VICTIM.name)
    try:
        with pytest.raises(CancelError, match="job-1 was not cancelled: .*already names message"):
            await client.cancel("job-1", wait=1.0)
    finally:
        await client.close()


async def test_an_operators_cancel_whose_id_another_login_took_is_an_error(secured):
    client = await client_of(secured, "cli")
    try:
        created = await client.bus.publish(
            SUBJECTS.podgroups, [PodGroupCreated(name="op-job", queue="qa")], msg_id="created:op-job"
        )
        await squat(secured, message_id(f"delete:op-job:{created}", client.id_key))
        with pytest.raises(CancelError, match="op-job was not cancelled: .*already names message"):
            await client.cancel("op-job")
        deleted = [
            e
            async for d in client.bus.read([SUBJECTS.podgroups])
            for e in d.events
            if isinstance(e, PodGroupDeleted) and e.name == "op-job"
        ]
    finally:
        await client.close()
    assert deleted == []
