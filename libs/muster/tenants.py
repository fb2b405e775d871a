"""Tenants: teams that share a system, each with its own NATS login, queues and jobs.

A tenant ``NAME`` logs in as the NATS user ``tenant-NAME`` and may publish
only on ``<prefix>.workloads.NAME.<queue>`` for the queues it was given
(``muster.runtime.security.tenant_permissions``). Which tenants exist, and
their queues, is kept in ``MUSTER_HOME/tenants.json``; each one's login
(password included) in ``MUSTER_HOME/secrets/tenants/NAME.json``, readable by
its owner only, which is the file a tenant's client reads.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from muster.names import QUEUE, TENANT, quoted
from muster.runtime.security import generate_password, inbox_prefix, secrets_dir, write_private

TENANTS_FILE = "tenants.json"
TENANTS_DIR = "tenants"

# A tenant's name and each of its queues is one NATS subject token: `muster.names`' rules keep
# `*`, `>` and spaces out; a tenant's name holds no `.` by its rule, its queues' names are refused one.


class TenantError(ValueError):
    """A tenant that cannot be declared or found; the message names the field."""


def nats_user(name: str) -> str:
    """The NATS user tenant ``name`` logs in as."""
    return f"tenant-{name}"


def check_name(name: str) -> str:
    if (why := TENANT.refusal(name)) is not None:
        raise TenantError(f"name: {why}")
    return name


def check_queues(queues: Sequence[str]) -> tuple[str, ...]:
    if not queues:
        raise TenantError("queue: a tenant needs at least one queue")
    for queue in queues:
        if (why := QUEUE.refusal(queue)) is not None:
            raise TenantError(f"queue: {why}")
        if "." in queue:
            raise TenantError(
                f"queue: {quoted(queue)} cannot be part of a subject: a tenant's queue holds no '.'"
            )
    return tuple(dict.fromkeys(queues))


@dataclass(frozen=True)
class Tenant:
    name: str
    queues: tuple[str, ...]
    password: str = field(default="", repr=False)

    @property
    def user(self) -> str:
        return nats_user(self.name)


def _registry(home: Path) -> Path:
    return home / TENANTS_FILE


def login_path(home: Path, name: str) -> Path:
    return home / "secrets" / TENANTS_DIR / f"{name}.json"


def load(home: Path) -> list[Tenant]:
    """Every declared tenant, with its password (from its login file), sorted by name."""
    try:
        declared = json.loads(_registry(home).read_text())
    except FileNotFoundError:
        return []
    found = []
    for name, entry in sorted(declared.items()):
        try:
            password = json.loads(login_path(home, name).read_text())["password"]
        except (FileNotFoundError, KeyError, ValueError):
            # A tenant without its login file cannot log in; declaring it again makes a new one.
            continue
        found.append(Tenant(name, tuple(entry["queues"]), password))
    return found


def _save(home: Path, tenants: Sequence[Tenant]) -> None:
    home.mkdir(parents=True, exist_ok=True)
    record = {t.name: {"queues": list(t.queues)} for t in sorted(tenants, key=lambda t: t.name)}
    write_private(_registry(home), json.dumps(record, indent=2))


def write_login(home: Path, tenant: Tenant, nats_url: str, ca: str | None) -> Path:
    """The tenant's login file: where to connect, as whom, and the subjects it may use."""
    folder = secrets_dir(home) / TENANTS_DIR
    folder.mkdir(exist_ok=True, mode=0o700)
    folder.chmod(0o700)
    return write_private(
        login_path(home, tenant.name),
        json.dumps(
            {"tenant": tenant.name, "queues": list(tenant.queues), "nats_url": nats_url, "nats_ca": ca,
             "user": tenant.user, "password": tenant.password, "inbox_prefix": inbox_prefix(tenant.user)},
            indent=2,
        ),
    )  # fmt: skip


def add(home: Path, name: str, queues: Sequence[str], *, nats_url: str = "", ca: str | None = None) -> Tenant:
    """Declare tenant ``name`` with ``queues`` (again: its queues are replaced, its password kept)."""
    check_name(name)
    tenant_queues = check_queues(queues)
    existing = {t.name: t for t in load(home)}
    password = existing[name].password if name in existing else generate_password()
    tenant = Tenant(name, tenant_queues, password)
    existing[name] = tenant
    write_login(home, tenant, nats_url, ca)
    _save(home, list(existing.values()))
    return tenant


def remove(home: Path, name: str) -> None:
    """Forget tenant ``name`` and its login; its jobs stay until cancelled."""
    existing = {t.name: t for t in load(home)}
    if name not in existing:
        raise TenantError(f"name: no tenant {name!r}")
    del existing[name]
    _save(home, list(existing.values()))
    login_path(home, name).unlink(missing_ok=True)


@dataclass(frozen=True)
class TenantLogin:
    """What a tenant's client reads from its login file."""

    tenant: str
    queues: tuple[str, ...]
    user: str
    password: str = field(repr=False)
    nats_ca: str | None = None

    @classmethod
    def read(cls, home: Path, name: str) -> TenantLogin:
        check_name(name)
        try:
            data = json.loads(login_path(home, name).read_text())
        except FileNotFoundError:
            raise TenantError(
                f"tenant: no login for {name!r} under {home} (declare it with `muster tenant add`)"
            ) from None
        return cls(data["tenant"], tuple(data["queues"]), data["user"], data["password"], data.get("nats_ca"))

    def queue_for(self, queue: str | None) -> str:
        """The queue to submit to: the one asked for, if the tenant's, else its only one."""
        if queue is None:
            if len(self.queues) == 1:
                return self.queues[0]
            raise TenantError(
                f"queue: tenant {self.tenant} has queues {', '.join(self.queues)}; name the one to use"
            )
        if queue not in self.queues:
            raise TenantError(
                f"queue: {queue!r} is not one of tenant {self.tenant}'s queues ({', '.join(self.queues)})"
            )
        return queue
