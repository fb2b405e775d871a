"""Tenants' NATS logins, used as an attacker would: each may publish only on its own queues' subjects.

The server refuses the rest, so nothing a tenant publishes elsewhere is ever stored.
"""

from __future__ import annotations

import nats
import pytest
from muster.bus import NatsBus
from muster.events import CancelRequested, PodGroupDeleted, WorkloadSubmitted
from muster.runtime.security import (
    NatsAuth,
    NatsCredentials,
    generate_password,
    nats_connect_options,
)
from muster.tenants import Tenant

from tests.security.conftest import SUBJECTS, LoginsServer, logins_server

pytestmark = pytest.mark.nats

TENANTS = (
    Tenant("team-a", ("qa",), generate_password()),
    Tenant("team-b", ("qb",), generate_password()),
)


@pytest.fixture(scope="module")
def secured(tmp_path_factory):
    logins = {t.name: NatsCredentials(t.user, t.password) for t in TENANTS}
    auth_of = lambda passwords: NatsAuth("muster", passwords, tenants=TENANTS)  # noqa: E731
    with logins_server(tmp_path_factory.mktemp("nats"), auth_of, logins) as server:
        yield server


def submission(uid: str) -> WorkloadSubmitted:
    return WorkloadSubmitted(uid=uid, manifests=[])


async def stored(secured: LoginsServer, subject: str) -> int:
    bus = await secured.bus("cli")
    try:
        return len([d async for d in bus.read([subject])])
    finally:
        await bus.close()


async def test_a_tenant_may_submit_and_request_a_cancel_on_its_own_queues_subject(secured):
    bus = await secured.bus("team-a")
    try:
        subject = SUBJECTS.tenant_workloads("team-a", "qa")
        assert await bus.publish(subject, [submission("mine")], msg_id="own:submit") > 0
        assert await bus.publish(subject, [CancelRequested(uid="c", job="j")], msg_id="own:cancel") > 0
    finally:
        await bus.close()


@pytest.mark.parametrize(
    ("subject", "events"),
    [
        (SUBJECTS.tenant_workloads("team-b", "qb"), [submission("squat")]),  # another tenant's queue
        (SUBJECTS.tenant_workloads("team-b", "qb"), [CancelRequested(uid="c", job="theirs")]),
        (SUBJECTS.tenant_workloads("team-a", "qb"), [submission("queue")]),  # a queue it was not given
        (SUBJECTS.workloads, [submission("shared")]),  # the system's own logins' subject
        (SUBJECTS.podgroups, [PodGroupDeleted(name="theirs")]),  # a cancel without the podgrouper
    ],
)
async def test_a_tenant_may_not_publish_anywhere_else(secured, subject, events):
    before = await stored(secured, subject)
    bus = await secured.bus("team-a")
    try:
        with pytest.raises(nats.errors.TimeoutError):
            await bus.publish(subject, events, msg_id=f"forged:{subject}:{events[0]!r}")
    finally:
        await bus.close()
    assert await stored(secured, subject) == before


async def test_a_tenant_may_not_take_over_a_services_durable_consumer(secured):
    errors: list[str] = []

    async def on_error(exc: Exception) -> None:
        errors.append(str(exc))

    login = secured.login("team-a")
    nc = await nats.connect(
        secured.server.url, error_cb=on_error, allow_reconnect=False,
        **nats_connect_options(secured.server.url, login),
    )  # fmt: skip
    try:
        js = nc.jetstream(timeout=1.0)
        with pytest.raises(nats.errors.TimeoutError):
            await js.pull_subscribe(SUBJECTS.workloads, durable="podgrouper", stream=SUBJECTS.stream)
    finally:
        await nc.close()
    assert any("permissions violation" in e.lower() for e in errors), errors


async def test_a_tenant_cannot_log_in_with_another_tenants_password(secured):
    from muster.bus.nats import NatsLoginRefused

    a, b = TENANTS
    with pytest.raises(NatsLoginRefused):
        await NatsBus.connect(
            secured.server.url, SUBJECTS, service="t", credentials=NatsCredentials(a.user, b.password)
        )
