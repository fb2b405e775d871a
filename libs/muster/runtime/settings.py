"""Settings every muster process reads from its environment.

``MUSTER_HOME`` (default ``./.muster``) is the folder a system keeps its
embedded servers' data in and where ``muster up`` records the addresses of
what it started. ``MUSTER_NATS_URL`` / ``MUSTER_PG_DSN`` point at servers
that already run; ``MUSTER_PREFIX`` names the subjects and stream.
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

    @property
    def subjects(self) -> Subjects:
        return Subjects(self.prefix)


@dataclass(frozen=True)
class Settings:
    home: Path
    nats_url: str | None = None
    pg_dsn: str | None = None
    prefix: str = "muster"
    extra: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None) -> Settings:
        env = dict(os.environ if env is None else env)
        return cls(
            home=Path(env.get("MUSTER_HOME") or ".muster").resolve(),
            nats_url=env.get("MUSTER_NATS_URL") or None,
            pg_dsn=env.get("MUSTER_PG_DSN") or None,
            prefix=env.get("MUSTER_PREFIX") or "muster",
            extra={k: v for k, v in env.items() if k.startswith("MUSTER_")},
        )

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
            nats_url=data["nats_url"], pg_dsn=data["pg_dsn"], prefix=data.get("prefix", self.prefix)
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
        return Endpoints(nats_url=nats_url, pg_dsn=pg_dsn, prefix=prefix)


def write_endpoints(home: Path, endpoints: Endpoints) -> Path:
    """Record a running system's addresses in its home, atomically."""
    home.mkdir(parents=True, exist_ok=True)
    path = home / ENDPOINTS_FILE
    tmp = path.with_suffix(".tmp")
    tmp.write_text(
        json.dumps({"nats_url": endpoints.nats_url, "pg_dsn": endpoints.pg_dsn, "prefix": endpoints.prefix})
    )
    tmp.replace(path)
    return path


def clear_endpoints(home: Path) -> None:
    (home / ENDPOINTS_FILE).unlink(missing_ok=True)
