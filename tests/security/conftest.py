"""Embedded servers that refuse strangers, as ``running_system`` starts them, one per module."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass

import pytest
from muster.bus import NatsBus
from muster.runtime.embedded import EmbeddedNats, EmbeddedPostgres
from muster.runtime.security import (
    NATS_USERS,
    PG_ROLES,
    NatsAuth,
    NatsCredentials,
    generate_password,
    make_tls,
)
from muster.subjects import Subjects
from muster.tenants import nats_user

SUBJECTS = Subjects("muster")


@dataclass
class SecuredNats:
    server: EmbeddedNats
    passwords: dict[str, str]
    ca: str | None = None

    @property
    def url(self) -> str:
        return self.server.url

    def login(self, user: str) -> NatsCredentials:
        return NatsCredentials(user, self.passwords[user], self.ca)

    async def bus(self, user: str) -> NatsBus:
        bus = await NatsBus.connect(self.url, SUBJECTS, service=f"test-{user}", credentials=self.login(user))
        # A refused publish gets no answer: wait briefly, not the default ten seconds.
        bus.js._timeout = 1.0
        return bus

    @contextlib.asynccontextmanager
    async def buses(self, *users: str) -> AsyncIterator[list[NatsBus]]:
        """One connection per user named, each under its own login, all closed at the end."""
        connected = [await self.bus(user) for user in users]
        try:
            yield connected
        finally:
            for bus in connected:
                await bus.close()


class LoginsServer:
    """An embedded server with the system's users and more logins besides (tenants', nodes')."""

    def __init__(self, server: EmbeddedNats, passwords: dict[str, str], logins: dict[str, NatsCredentials]):
        self.server, self.passwords, self.logins = server, passwords, logins

    def login(self, who: str) -> NatsCredentials:
        return self.logins.get(who) or NatsCredentials(who, self.passwords[who])

    async def bus(self, who: str) -> NatsBus:
        login = self.login(who)
        bus = await NatsBus.connect(
            self.server.url, SUBJECTS, service=f"test-{who}", credentials=login,
            # A tenant may not ask about the stream (it reads its own subjects only).
            ensure_stream=not login.user.startswith(nats_user("")),
        )  # fmt: skip
        bus.js._timeout = 1.0  # a refused publish gets no answer: wait briefly
        bus.publish_patience = 0.0
        return bus


@contextlib.contextmanager
def logins_server(folder, auth_of, logins: dict[str, NatsCredentials]) -> Iterator[LoginsServer]:
    """A server whose config ``auth_of(system passwords)`` renders, its stream made by the CLI user."""
    passwords = {u: generate_password() for u in NATS_USERS}
    server = EmbeddedNats(folder, auth=auth_of(passwords)).start()
    try:
        found = LoginsServer(server, passwords, logins)

        async def create_stream() -> None:
            await (await found.bus("cli")).close()

        asyncio.run(create_stream())
        yield found
    finally:
        server.stop()


async def _create_stream(secured: SecuredNats) -> None:
    bus = await secured.bus("cli")
    await bus.close()


@pytest.fixture(scope="module")
def secured_nats(tmp_path_factory):
    passwords = {u: generate_password() for u in NATS_USERS}
    server = EmbeddedNats(tmp_path_factory.mktemp("nats"), auth=NatsAuth("muster", passwords)).start()
    try:
        secured = SecuredNats(server, passwords)
        # The stream exists before anyone else connects, as `muster up` makes sure (as the CLI user).
        asyncio.run(_create_stream(secured))
        yield secured
    finally:
        server.stop()


@pytest.fixture(scope="module")
def tls_nats(tmp_path_factory):
    home = tmp_path_factory.mktemp("tls")
    passwords = {u: generate_password() for u in NATS_USERS}
    tls = make_tls(home / "tls")
    server = EmbeddedNats(home, auth=NatsAuth("muster", passwords, tls=tls)).start()
    try:
        secured = SecuredNats(server, passwords, str(tls.ca))
        asyncio.run(_create_stream(secured))
        yield secured
    finally:
        server.stop()


@dataclass
class SecuredPostgres:
    server: EmbeddedPostgres
    passwords: dict[str, str]

    def dsn(self, role: str) -> str:
        return f"postgresql://{role}@{self.server.host}:{self.server.port}/postgres"


@pytest.fixture(scope="module")
def secured_pg(tmp_path_factory):
    passwords = {r: generate_password() for r in PG_ROLES}
    server = EmbeddedPostgres(tmp_path_factory.mktemp("pg"), password=passwords["postgres"]).start()
    try:
        yield SecuredPostgres(server, passwords)
    finally:
        server.stop()
