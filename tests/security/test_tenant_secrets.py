"""Tenants' secrets, tried as an attacker would: each tenant writes and lists its own space only, fetches
no value by name, and its jobs can name only its own secrets; agents read what the pods they start need."""

from __future__ import annotations

import asyncio

import nats
import pytest
from muster.events import SecretEnv
from muster.runtime.security import NatsAuth, NatsCredentials, generate_password
from muster.secret_names import MissingSecret, bucket, subject_prefix
from muster.secrets_store import OwnSecrets, ensure_bucket, read_bucket, resolve
from muster.tenants import Tenant

from tests.security.conftest import SUBJECTS, LoginsServer, logins_server

pytestmark = pytest.mark.nats

TENANTS = (
    Tenant("team-a", ("qa",), generate_password()),
    Tenant("team-b", ("qb",), generate_password()),
)
STREAM = SUBJECTS.stream
REFUSED = (nats.errors.TimeoutError, TimeoutError)


@pytest.fixture(scope="module")
def secured(tmp_path_factory):
    logins = {t.name: NatsCredentials(t.user, t.password) for t in TENANTS}
    auth_of = lambda passwords: NatsAuth("muster", passwords, tenants=TENANTS)  # noqa: E731
    with logins_server(tmp_path_factory.mktemp("nats"), auth_of, logins) as server:

        async def make_bucket() -> None:
            bus = await server.bus("cli")  # as `muster up` does
            try:
                await ensure_bucket(bus.js, STREAM)
            finally:
                await bus.close()

        asyncio.run(make_bucket())
        yield server


async def as_owner(secured: LoginsServer, who: str, act):
    """``act(own secrets)`` under ``who``'s login (a tenant, or ``cli`` for the system's space)."""
    bus = await secured.bus(who)
    try:
        owner = "" if who == "cli" else who
        return await act(OwnSecrets(bus.nc, STREAM, owner, timeout=1.0))
    finally:
        await bus.close()


async def as_agent(secured: LoginsServer, owner: str, secret: str) -> str:
    """The value an agent starting ``owner``'s pod would give variable ``V`` naming ``secret``."""
    bus = await secured.bus("agent")
    try:
        kv = await read_bucket(bus.js, STREAM)
        return (await resolve(kv, owner, [SecretEnv(name="V", secret=secret)]))["V"]
    finally:
        await bus.close()


async def test_each_tenant_keeps_its_own_value_under_a_shared_name(secured):
    await as_owner(secured, "team-a", lambda s: s.set("db", b"value-of-a"))
    await as_owner(secured, "team-b", lambda s: s.set("db", b"value-of-b"))
    assert await as_agent(secured, "team-a", "db") == "value-of-a"
    assert await as_agent(secured, "team-b", "db") == "value-of-b"


async def test_a_tenant_lists_the_names_of_its_own_secrets_only(secured):
    await as_owner(secured, "team-a", lambda s: s.set("listed-a/key", b"x"))
    await as_owner(secured, "team-b", lambda s: s.set("listed-b", b"y"))
    names = await as_owner(secured, "team-a", lambda s: s.names())
    assert "listed-a/key" in names and "listed-b" not in names


async def test_a_tenants_job_cannot_name_another_tenants_secret(secured):
    await as_owner(secured, "team-b", lambda s: s.set("only-b", b"b's"))
    with pytest.raises(MissingSecret) as missing:
        await as_agent(secured, "team-a", "only-b")
    assert (missing.value.variable, missing.value.secret) == ("V", "only-b")


@pytest.mark.parametrize("space", ["team-b", "_system"])
async def test_a_tenant_may_not_write_into_another_space(secured, space):
    owner = "" if space == "_system" else space
    await as_owner(secured, owner or "cli", lambda s: s.set("target", b"original"))
    bus = await secured.bus("team-a")
    try:
        with pytest.raises(REFUSED):
            await bus.js.publish(f"{subject_prefix(STREAM)}{space}.target", b"forged")
    finally:
        await bus.close()
    assert await as_agent(secured, owner, "target") == "original"


async def test_a_tenant_may_not_list_another_tenants_secrets(secured):
    await as_owner(secured, "team-b", lambda s: s.set("hidden", b"z"))
    bus = await secured.bus("team-a")
    try:
        # Its own listing, pointed at another's space.
        snoop = OwnSecrets(bus.nc, STREAM, "team-b", timeout=1.0)
        with pytest.raises(REFUSED):
            await snoop.names()
    finally:
        await bus.close()


@pytest.mark.parametrize("space", ["team-a", "team-b"])
async def test_a_tenant_may_not_fetch_a_value_by_its_name(secured, space):
    await as_owner(secured, space, lambda s: s.set("readable", b"v"))
    bus = await secured.bus("team-a")
    try:
        with pytest.raises(REFUSED):
            await bus.js.get_msg(
                f"KV_{bucket(STREAM)}", subject=f"{subject_prefix(STREAM)}{space}.readable", direct=True
            )
    finally:
        await bus.close()


async def test_a_removed_secret_is_gone_for_the_agent_too(secured):
    await as_owner(secured, "team-a", lambda s: s.set("short-lived", b"v"))
    assert await as_owner(secured, "team-a", lambda s: s.remove("short-lived"))
    assert "short-lived" not in await as_owner(secured, "team-a", lambda s: s.names())
    with pytest.raises(MissingSecret):
        await as_agent(secured, "team-a", "short-lived")
