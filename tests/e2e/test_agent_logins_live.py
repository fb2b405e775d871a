"""Node logins on a live, secured system: `muster node add` while it runs lets that node's agent in
at once, speaking for its own node only; `muster node remove` shuts it out."""

from __future__ import annotations

import uuid

import nats
import pytest
from muster import agent_logins
from muster import events as ev
from muster.bus import NatsBus
from muster.bus.nats import NatsLoginRefused
from muster.runtime.settings import Settings
from muster.runtime.system import running_system

from tests.e2e.conftest import SERVICE_ENV, events_on, muster, run
from tests.polling import wait_for

pytestmark = [pytest.mark.nats, pytest.mark.postgres, pytest.mark.slow]


@pytest.fixture(scope="module")
def system(tmp_path_factory, servers):
    """An embedded NATS that refuses strangers (no service needed: the server decides)."""
    home = tmp_path_factory.mktemp("nodes")
    settings = Settings(home=home / "home", pg_dsn=servers.pg_dsn, prefix=f"n{uuid.uuid4().hex[:12]}")
    with running_system(settings, services=(), service_env=SERVICE_ENV) as live:
        assert live.logins.nats, "embedded NATS runs with a user per service"
        yield live


async def connect_as(system, login: agent_logins.AgentLogin) -> NatsBus | None:
    """A bus logged in as ``login``, or None while the server refuses it."""
    try:
        bus = await NatsBus.connect(
            system.endpoints.nats_url,
            system.endpoints.subjects,
            service="test",
            credentials=login.credentials(),
        )
    except NatsLoginRefused:
        return None
    bus.js._timeout = 1.0  # a refused publish gets no answer: wait briefly
    bus.publish_patience = 0.0
    return bus


def test_a_node_added_while_the_system_runs_reports_its_own_pods_and_no_other_nodes(system):
    muster(system, "node", "add", "gpu-1")
    s = system.endpoints.subjects

    async def report() -> bool:
        bus = await connect_as(system, agent_logins.find(system.settings.home, "gpu-1"))
        if bus is None:
            return False
        try:
            done = ev.PodCompleted(job="j", pod=0, node="gpu-1", pool="default")
            await bus.publish(s.node_pods("default", "gpu-1"), [done], msg_id="gpu-1:done")
            with pytest.raises(nats.errors.TimeoutError):
                other = ev.PodCompleted(job="j", pod=1, node="gpu-2", pool="default")
                await bus.publish(s.node_pods("default", "gpu-2"), [other], msg_id="gpu-1:forged")
        finally:
            await bus.close()
        return True

    # The server may still be reloading its users.
    wait_for(lambda: run(report()), timeout=20, what="gpu-1's login accepted")
    assert [e.node for e in run(events_on(system, s.node_pods("default", "*")))] == ["gpu-1"]


def test_a_removed_nodes_login_is_refused(system):
    muster(system, "node", "add", "gpu-3")
    login = agent_logins.find(system.settings.home, "gpu-3")
    wait_for(lambda: run(logs_in(system, login)), timeout=20, what="gpu-3's login accepted")
    muster(system, "node", "remove", "gpu-3")
    # The login file is gone; its password, kept by someone, no longer works.
    assert agent_logins.find(system.settings.home, "gpu-3") is None
    wait_for(lambda: not run(logs_in(system, login)), timeout=20, what="gpu-3's login refused")


async def logs_in(system, login: agent_logins.AgentLogin) -> bool:
    bus = await connect_as(system, login)
    if bus is not None:
        await bus.close()
    return bus is not None
