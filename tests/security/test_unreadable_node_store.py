"""A node's snapshot store that the NATS configuration leaves out of the readers' allow lists is named
at once, not waited on: the server drops the denied request, which would otherwise time out."""

from __future__ import annotations

import pytest
from muster.agent_logins import AgentLogin
from muster.runtime import security
from muster.runtime.security import NatsAuth, NatsCredentials, agent_user, generate_password
from muster.snapshots import ObjectStoreSnapshots, StoreNotReadable, existing_stores

from tests.security.conftest import SUBJECTS, logins_server

pytestmark = pytest.mark.nats

AGENTS = (AgentLogin("a", generate_password()), AgentLogin("b", generate_password()))


@pytest.fixture(scope="module")
def forgotten_b(tmp_path_factory):
    """Both nodes have agent logins, but the readers' allow lists were rendered for node ``a`` only."""
    logins = {a.node: NatsCredentials(a.user, a.password) for a in AGENTS}
    render = security.nats_permissions
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(security, "nats_permissions", lambda prefix, nodes=(): render(prefix, ["a"]))
        auth_of = lambda passwords: NatsAuth("muster", passwords, agents=AGENTS)  # noqa: E731
        server = logins_server(tmp_path_factory.mktemp("nats"), auth_of, logins)
        found = server.__enter__()
    try:
        yield found
    finally:
        server.__exit__(None, None, None)


async def test_a_node_store_the_readers_may_not_read_is_named_at_once(forgotten_b):
    for node in ("a", "b"):
        agent = await forgotten_b.bus(node)
        try:
            await ObjectStoreSnapshots.open(agent.js, SUBJECTS.stream, agent_user(node))
        finally:
            await agent.close()
    projector = await forgotten_b.bus("projector")
    projector.js._timeout = 60.0  # a wait for the request's answer would outlast the test's patience
    try:
        with pytest.raises(StoreNotReadable, match="MUSTER_SNAPSHOTS_AGENT_B of agent-b"):
            await existing_stores(projector.js, SUBJECTS.stream)
    finally:
        await projector.close()
