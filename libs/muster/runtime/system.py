"""A whole muster system: servers (embedded or given) and every service process.

``muster up``, ``muster demo``, the end-to-end tests and the e2e benchmark
all start a system the same way.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from muster import agent_logins, tenants
from muster.runtime import security
from muster.runtime.embedded import die_with_parent, embedded_servers
from muster.runtime.home_lock import home_lock
from muster.runtime.restarts import MAX_DELAY, RestartBackoff
from muster.runtime.security import NatsAuth, NatsCredentials
from muster.runtime.settings import Endpoints, Settings, clear_endpoints, write_endpoints

SERVICES = ("projector", "queue_controller", "podgrouper", "allocator", "binder", "nodewatch", "dashboard")


@dataclass
class ServiceProcess:
    name: str
    proc: subprocess.Popen
    log: Path
    service: str = ""
    """The module under services/ it runs (``name`` is its key: allocators of several pools differ)."""
    env: dict[str, str] = field(default_factory=dict)
    """What was added to its environment, so a restart gets the same."""

    def alive(self) -> bool:
        return self.proc.poll() is None


@dataclass(frozen=True)
class Logins:
    """Who each service logs in as: NATS credentials by user, Postgres DSNs and passwords by role.

    Empty when the servers were given (``MUSTER_NATS_URL`` / ``MUSTER_PG_DSN``):
    then every service uses the given addresses as they are.
    """

    nats: dict[str, NatsCredentials] = field(default_factory=dict, repr=False)
    pg_dsn: dict[str, str] = field(default_factory=dict)
    pg_password: dict[str, str] = field(default_factory=dict, repr=False)

    def service_env(self, name: str, endpoints: Endpoints) -> dict[str, str]:
        """The variables that give service ``name`` its own logins and no one else's."""
        env: dict[str, str] = {}
        user = security.SERVICE_USERS.get(name, "cli")
        credentials = self.nats.get(user)
        if credentials is not None:
            if credentials.user:
                env.update(MUSTER_NATS_USER=credentials.user, MUSTER_NATS_PASSWORD=credentials.password or "")
            if credentials.ca:
                env["MUSTER_NATS_CA"] = credentials.ca
        role = security.PG_ROLE_OF_SERVICE.get(name)
        if self.pg_dsn:
            env["MUSTER_PG_DSN"] = self.pg_dsn[role or security.PG_READER]
            if role is not None:
                env["PGPASSWORD"] = self.pg_password[role]
        elif name == "dashboard" and endpoints.pg_read_dsn:
            env["MUSTER_PG_DSN"] = endpoints.pg_read_dsn
        return env


# Inherited logins a service must not see: each gets its own from Logins.
_LOGIN_VARIABLES = ("MUSTER_NATS_USER", "MUSTER_NATS_PASSWORD", "MUSTER_NATS_CA", "PGPASSWORD", "PGPASSFILE")


@dataclass
class System:
    settings: Settings
    endpoints: Endpoints
    processes: dict[str, ServiceProcess] = field(default_factory=dict)
    service_env: dict[str, str] = field(default_factory=dict)
    logins: Logins = field(default_factory=Logins)

    def env(self, name: str | None = None) -> dict[str, str]:
        """The environment of service ``name``: the caller's, the system's addresses, its own logins."""
        env = dict(os.environ)
        if self.logins.nats or self.logins.pg_dsn:
            for variable in _LOGIN_VARIABLES:
                env.pop(variable, None)
        # Each service serves /healthz, /readyz, /metrics on a free port, recorded under home/http/.
        env.setdefault("MUSTER_HTTP_PORT", "0")
        env.update(self.service_env)
        env.update(
            MUSTER_HOME=str(self.settings.home),
            MUSTER_NATS_URL=self.endpoints.nats_url,
            MUSTER_PG_DSN=self.endpoints.pg_dsn,
            MUSTER_PREFIX=self.endpoints.prefix,
        )
        if name is not None:
            env.update(self.logins.service_env(name, self.endpoints))
        return env

    def start_service(
        self, name: str, *, key: str | None = None, env: dict[str, str] | None = None
    ) -> ServiceProcess:
        """Start ``services.<name>`` as a process; ``key`` names it when several run (allocators per pool)."""
        key = key or name
        logs = self.settings.home / "logs"
        logs.mkdir(parents=True, exist_ok=True)
        log = logs / f"{key}.log"
        with open(log, "ab") as out:
            proc = subprocess.Popen(
                [sys.executable, "-m", f"services.{name}"],
                env={**self.env(name), **(env or {})},
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                preexec_fn=die_with_parent,
            )
        self.processes[key] = ServiceProcess(key, proc, log, service=name, env=dict(env or {}))
        return self.processes[key]

    def stop_service(self, name: str, sig: int = signal.SIGTERM, timeout: float = 10.0) -> None:
        service = self.processes.pop(name, None)
        if service is None or not service.alive():
            return
        service.proc.send_signal(sig)
        try:
            service.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            service.proc.kill()
            service.proc.wait(5)

    def check(self) -> list[str]:
        """Names of services that have exited on their own."""
        return [name for name, p in self.processes.items() if not p.alive()]

    def stop_all(self, timeout: float = 10.0) -> None:
        """Stop every service at once: each shuts down on its own (its acks and publishes flushed), so
        none waits for another, and the system stops as fast as its slowest service."""
        stopping = [self.processes.pop(name) for name in reversed(list(self.processes))]
        for service in stopping:
            if service.alive():
                service.proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + timeout
        for service in stopping:
            try:
                service.proc.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                service.proc.kill()
                service.proc.wait(5)


async def prepare(
    endpoints: Endpoints,
    *,
    nats_credentials: NatsCredentials | None = None,
    writer_dsn: str | None = None,
    writer_password: str | None = None,
) -> None:
    """Create the stream and the schema before any service starts, so none races another."""
    from muster.bus import NatsBus
    from muster.secrets_store import ensure_bucket
    from muster.store import connect

    bus = await NatsBus.connect(
        endpoints.nats_url, endpoints.subjects, service="muster-up", credentials=nats_credentials
    )
    # Before any tenant's `muster secret set`, which may write its secrets but not make their bucket.
    await ensure_bucket(bus.js, endpoints.subjects.stream)
    await bus.close()
    extra = {"password": writer_password} if writer_password is not None else {}
    conn = await connect(writer_dsn or endpoints.pg_dsn, endpoints.prefix, **extra)
    await conn.close()


async def _setup_roles(admin_dsn: str, password: str, prefix: str, passwords: dict[str, str]) -> None:
    import asyncpg

    from muster.store import schema_for

    conn = await asyncpg.connect(admin_dsn, password=password)
    try:
        await security.setup_postgres_roles(conn, schema_for(prefix), passwords)
    finally:
        await conn.close()


def _as_role(dsn: str, role: str) -> str:
    parts = urlsplit(dsn)
    host = parts.hostname or "127.0.0.1"
    netloc = f"{role}@{host}:{parts.port}" if parts.port else f"{role}@{host}"
    return urlunsplit(parts._replace(netloc=netloc))


@dataclass(frozen=True)
class _Plan:
    """What of the embedded servers' security is on, and the secrets for it."""

    nats_auth: NatsAuth | None
    pg_password: str | None
    secrets: security.SystemSecrets | None

    @classmethod
    def of(cls, settings: Settings) -> _Plan:
        embedded_nats, embedded_pg = not settings.nats_url, not settings.pg_dsn
        nats_users = embedded_nats and settings.switch("MUSTER_NATS_AUTH")
        tls = embedded_nats and settings.switch("MUSTER_NATS_TLS", default=False)
        pg_roles = embedded_pg and settings.switch("MUSTER_PG_AUTH")
        if not (nats_users or tls or pg_roles):
            return cls(None, None, None)
        found = security.SystemSecrets.load_or_create(settings.home)
        auth = None
        if nats_users or tls:
            auth = NatsAuth(
                prefix=settings.prefix,
                passwords=found.nats if nats_users else {},
                tls=security.make_tls(settings.home / "tls") if tls else None,
                tenants=tenants.load(settings.home) if nats_users else (),
                agents=agent_logins.load(settings.home) if nats_users else (),
            )
        return cls(auth, found.postgres[security.PG_SUPERUSER] if pg_roles else None, found)


@contextlib.contextmanager
def running_system(
    settings: Settings,
    services: tuple[str, ...] = SERVICES,
    service_env: dict[str, str] | None = None,
) -> Iterator[System]:
    """Servers (embedded unless configured) plus the given services, until the block ends.

    Embedded servers refuse strangers: each service logs in to NATS as its own
    user with only the subjects it needs, the projector writes Postgres and
    everything else only reads (``MUSTER_NATS_AUTH=off`` / ``MUSTER_PG_AUTH=off``
    turn that off, ``MUSTER_NATS_TLS=1`` adds TLS). The CLI's logins are left
    in owner-only files under ``MUSTER_HOME/secrets``; no address recorded or
    returned carries a password. Raises ``HomeLocked`` when another process runs a
    system under the same home.
    """
    # One system per home, refused before anything under it is touched (see home_lock).
    with home_lock(settings.home), _system(settings, services, service_env) as system:
        yield system


@contextlib.contextmanager
def _system(
    settings: Settings, services: tuple[str, ...], service_env: dict[str, str] | None
) -> Iterator[System]:
    plan = _Plan.of(settings)
    with embedded_servers(
        settings.home,
        nats=not settings.nats_url,
        postgres=not settings.pg_dsn,
        nats_auth=plan.nats_auth,
        pg_password=plan.pg_password,
    ) as (nats_url, pg_dsn):
        nats_url = settings.nats_url or nats_url or ""
        nats_logins: dict[str, NatsCredentials] = {}
        if plan.nats_auth is not None:
            ca = str(plan.nats_auth.tls.ca) if plan.nats_auth.tls else None
            nats_logins = {
                user: NatsCredentials(user, plan.nats_auth.passwords[user], ca) if plan.nats_auth.passwords
                else NatsCredentials(ca=ca)
                for user in security.NATS_USERS
            }  # fmt: skip
        logins = Logins(nats=nats_logins)
        writer_dsn, writer_password = settings.pg_dsn or pg_dsn or "", None
        reader_dsn = settings.pg_read_dsn
        if plan.pg_password is not None and pg_dsn:
            assert plan.secrets is not None
            asyncio.run(_setup_roles(pg_dsn, plan.pg_password, settings.prefix, plan.secrets.postgres))
            roles = (security.PG_WRITER, security.PG_READER)
            logins = Logins(
                nats=nats_logins,
                pg_dsn={role: _as_role(pg_dsn, role) for role in roles},
                pg_password={role: plan.secrets.postgres[role] for role in roles},
            )
            writer_dsn, writer_password = (
                logins.pg_dsn[security.PG_WRITER],
                logins.pg_password[security.PG_WRITER],
            )
        # Outside the services, the system is seen as a reader: that is what the CLI gets.
        endpoints = Endpoints(
            nats_url=nats_url,
            pg_dsn=logins.pg_dsn.get(security.PG_READER, writer_dsn),
            prefix=settings.prefix,
            pg_read_dsn=None if logins.pg_dsn else reader_dsn,
        )
        asyncio.run(
            prepare(
                endpoints,
                nats_credentials=nats_logins.get("cli"),
                writer_dsn=writer_dsn,
                writer_password=writer_password,
            )
        )
        system = System(settings, endpoints, service_env=dict(service_env or {}), logins=logins)
        passfile_set = False
        # From the first login written on, whatever stops the system (a SIGTERM in start-up included)
        # takes the logins away with it.
        try:
            if plan.secrets is not None:
                reader = None
                if logins.pg_dsn:
                    parts = urlsplit(endpoints.pg_dsn)
                    reader = security.pgpass_line(
                        parts.hostname or "", parts.port or 5432, parts.path.lstrip("/") or "postgres",
                        security.PG_READER, logins.pg_password[security.PG_READER],
                    )  # fmt: skip
                ca = plan.nats_auth.tls.ca if plan.nats_auth and plan.nats_auth.tls else None
                passwords = plan.nats_auth.passwords if plan.nats_auth else {}
                security.write_client_files(settings.home, nats_url, ca, passwords, pg_reader=reader)
                for tenant in plan.nats_auth.tenants if plan.nats_auth else ():
                    tenants.write_login(settings.home, tenant, nats_url, str(ca) if ca else None)
                for agent in plan.nats_auth.agents if plan.nats_auth else ():
                    agent_logins.add(settings.home, agent.node, nats_url=nats_url, ca=str(ca) if ca else None)
            if nats_logins:
                security.remember_started(nats_url, {u: nats_logins[u] for u in security.CLIENT_USERS})
            write_endpoints(settings.home, endpoints)
            passfile_set = _use_passfile(settings.home) if logins.pg_dsn else False
            for name in services:
                system.start_service(name)
            yield system
        finally:
            system.stop_all()
            clear_endpoints(settings.home)
            security.clear_client_files(settings.home)
            if nats_logins:
                security.forget_started(nats_url)
            if passfile_set:
                os.environ.pop("PGPASSFILE", None)


def _use_passfile(home: Path) -> bool:
    """Let this process's Postgres clients (a demo, a benchmark) log in as the reader, as the CLI does."""
    if os.environ.get("PGPASSFILE") or os.environ.get("PGPASSWORD"):
        return False
    os.environ["PGPASSFILE"] = str(home / security.SECRETS_DIR / security.PGPASS_FILE)
    return True


class StopRequested(KeyboardInterrupt):
    """SIGTERM, raised where the process is: it stops as Ctrl-C stops it, every cleanup run."""


@contextlib.contextmanager
def sigterm_stops() -> Iterator[None]:
    """Within: SIGTERM raises ``StopRequested``. Its default ends the process on the spot, skipping
    every ``finally`` (logins left in the home, servers left to die with their parent)."""

    def _raise(*_):
        _TERM_REQUESTED.set()
        raise StopRequested()

    _TERM_REQUESTED.clear()
    previous = signal.signal(signal.SIGTERM, _raise)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
        _TERM_REQUESTED.clear()


_TERM_REQUESTED = threading.Event()
"""A SIGTERM arrived under ``sigterm_stops``. Its exception can be swallowed where Python ignores
exceptions (a fork handler releasing the logging lock as a service process is started prints
"Exception ignored" and goes on), so ``wait_until_interrupted`` reads this too and stops at once."""


def wait_until_interrupted(system: System, poll: float = 0.5, max_backoff: float = MAX_DELAY) -> None:
    """Block until Ctrl-C or SIGTERM, restarting any service that exits.

    Services are crash-only: a restarted one rebuilds what it needs from the
    log, so a supervisor that restarts it is all the recovery there is. A
    service that keeps failing is restarted less and less often, and one that
    ran healthily for a while is restarted promptly again (``muster.runtime.restarts``).
    """
    stopping = False
    now = time.monotonic()
    backoffs: dict[str, RestartBackoff] = {}
    for key in system.processes:
        backoffs[key] = RestartBackoff(ceiling=max_backoff)
        backoffs[key].started(now)
    due: dict[str, float] = {}

    def _stop(*_):
        nonlocal stopping
        stopping = True

    if _TERM_REQUESTED.is_set():
        return

    previous = signal.signal(signal.SIGTERM, _stop)
    try:
        while not stopping:
            now = time.monotonic()
            for key in system.check():
                if key not in due:
                    delay = backoffs.setdefault(key, RestartBackoff(ceiling=max_backoff)).exited(now)
                    due[key] = now + delay
                    print(
                        f"service {key} exited; restarting in {delay:g}s (see {system.processes[key].log})",
                        file=sys.stderr,
                    )
            for key, when in list(due.items()):
                if when <= now:
                    del due[key]
                    process = system.processes[key]
                    system.start_service(process.service, key=key, env=process.env)
                    backoffs[key].started(now)
            time.sleep(poll)
    except KeyboardInterrupt:
        pass
    finally:
        signal.signal(signal.SIGTERM, previous)
