"""Settings every muster process reads from its environment.

``MUSTER_HOME`` (default ``./.muster``) is the folder a system keeps its
embedded servers' data in and where ``muster up`` records the addresses of
what it started. ``MUSTER_NATS_URL`` / ``MUSTER_PG_DSN`` point at servers
that already run (``MUSTER_PG_READ_DSN``, if set, is what readers use);
``MUSTER_PREFIX`` names the subjects and stream. No address recorded here
carries a password: logins are in ``MUSTER_HOME/secrets`` (see
``muster.runtime.security``).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from muster.subjects import Subjects

ENDPOINTS_FILE = "endpoints.json"


class NoRunningSystem(RuntimeError):
    """No server addresses are configured and no ``muster up`` is recorded."""


@dataclass(frozen=True)
class Endpoints:
    """Addresses of the bus and the database of one running system."""

    nats_url: str
    pg_dsn: str
    prefix: str = "muster"
    pg_read_dsn: str | None = None
    """Where read-only users (CLI queries, dashboard) connect, when not ``pg_dsn``."""

    @property
    def subjects(self) -> Subjects:
        return Subjects(self.prefix)

    @property
    def reader_dsn(self) -> str:
        """The DSN for queries: ``pg_read_dsn`` if there is one, else ``pg_dsn``."""
        return self.pg_read_dsn or self.pg_dsn


@dataclass(frozen=True)
class Settings:
    home: Path
    nats_url: str | None = None
    pg_dsn: str | None = None
    prefix: str = "muster"
    extra: dict[str, str] = field(default_factory=dict)
    pg_read_dsn: str | None = None

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None) -> Settings:
        env = dict(os.environ if env is None else env)
        return cls(
            home=Path(env.get("MUSTER_HOME") or ".muster").resolve(),
            nats_url=env.get("MUSTER_NATS_URL") or None,
            pg_dsn=env.get("MUSTER_PG_DSN") or None,
            prefix=env.get("MUSTER_PREFIX") or "muster",
            extra={k: v for k, v in env.items() if k.startswith("MUSTER_")},
            pg_read_dsn=env.get("MUSTER_PG_READ_DSN") or None,
        )

    def switch(self, name: str, default: bool = True) -> bool:
        """A yes/no setting from the environment (``off``, ``0``, ``false``, ``no`` are no)."""
        value = self.extra.get(name)
        if value is None or not value.strip():
            return default
        return value.strip().lower() not in ("off", "0", "false", "no")

    @property
    def endpoints_path(self) -> Path:
        return self.home / ENDPOINTS_FILE

    def recorded_endpoints(self) -> Endpoints | None:
        """What ``muster up`` recorded in this home, if anything."""
        try:
            data = json.loads(self.endpoints_path.read_text())
        except FileNotFoundError:
            return None
        return Endpoints(
            nats_url=data["nats_url"],
            pg_dsn=data["pg_dsn"],
            prefix=data.get("prefix", self.prefix),
            pg_read_dsn=data.get("pg_read_dsn"),
        )

    def endpoints(self) -> Endpoints:
        """The running system to talk to: the environment first, then the home's record."""
        recorded = self.recorded_endpoints()
        nats_url = self.nats_url or (recorded.nats_url if recorded else None)
        pg_dsn = self.pg_dsn or (recorded.pg_dsn if recorded else None)
        if not nats_url or not pg_dsn:
            raise NoRunningSystem(
                f"no running muster system found: set MUSTER_NATS_URL and MUSTER_PG_DSN, "
                f"or start one with `muster up` (MUSTER_HOME={self.home})"
            )
        prefix = self.prefix if "MUSTER_PREFIX" in self.extra or not recorded else recorded.prefix
        pg_read_dsn = self.pg_read_dsn
        if pg_read_dsn is None and not self.pg_dsn and recorded:
            pg_read_dsn = recorded.pg_read_dsn
        return Endpoints(nats_url=nats_url, pg_dsn=pg_dsn, prefix=prefix, pg_read_dsn=pg_read_dsn)


def write_endpoints(home: Path, endpoints: Endpoints) -> Path:
    """Record a running system's addresses in its home, atomically, readable by its owner only."""
    from muster.runtime.security import write_private

    home.mkdir(parents=True, exist_ok=True)
    path = home / ENDPOINTS_FILE
    record = {"nats_url": endpoints.nats_url, "pg_dsn": endpoints.pg_dsn, "prefix": endpoints.prefix}
    if endpoints.pg_read_dsn:
        record["pg_read_dsn"] = endpoints.pg_read_dsn
    # Owner-only: a DSN given by the environment may carry a password.
    return write_private(path, json.dumps(record))


def clear_endpoints(home: Path) -> None:
    (home / ENDPOINTS_FILE).unlink(missing_ok=True)
