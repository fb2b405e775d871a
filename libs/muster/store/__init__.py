"""Postgres: migrations, the projection's connection, and read queries.

Logins: a password in the DSN, else ``PGPASSWORD`` / ``PGPASSFILE`` as libpq
reads them, else the reader's password file ``muster up`` keeps under
``MUSTER_HOME``. A connection whose schema is already migrated migrates
nothing, so a read-only role (which may not create anything) connects too.
"""

from __future__ import annotations

import os
import re
from urllib.parse import urlsplit

import asyncpg


class StoreAccessError(RuntimeError):
    """The role cannot create or migrate the system's schema (a reader, before the writer has run)."""


def schema_for(prefix: str) -> str:
    """The Postgres schema a system with this subject prefix keeps its tables in."""
    return re.sub(r"[^a-z0-9_]", "_", prefix.lower())


def _login(dsn: str, kwargs: dict) -> dict:
    """``kwargs`` plus the home's password file when nothing else supplies a password."""
    if "password" in kwargs or "passfile" in kwargs or urlsplit(dsn).password:
        return kwargs
    if os.environ.get("PGPASSWORD") or os.environ.get("PGPASSFILE"):
        return kwargs
    from muster.runtime.security import pg_passfile

    passfile = pg_passfile()
    return {**kwargs, "passfile": str(passfile)} if passfile else kwargs


async def _is_current(conn: asyncpg.Connection, schema: str) -> bool:
    from muster.store.migrate import migrations

    try:
        rows = await conn.fetch(f'SELECT version FROM "{schema}".schema_migrations')
    except (asyncpg.UndefinedTableError, asyncpg.InvalidSchemaNameError, asyncpg.InsufficientPrivilegeError):
        return False
    return {v for v, _, _ in migrations()} <= {r["version"] for r in rows}


async def _migrate(conn: asyncpg.Connection, schema: str) -> None:
    from muster.store.migrate import migrate

    if await _is_current(conn, schema):
        return
    try:
        await migrate(conn, schema)
    except asyncpg.InsufficientPrivilegeError as exc:
        raise StoreAccessError(
            f"Postgres role {await conn.fetchval('SELECT current_user')!r} may not create or migrate "
            f"schema {schema!r} ({exc}); the projector's role does that when the system starts"
        ) from exc


async def connect(dsn: str, prefix: str, **kwargs) -> asyncpg.Connection:
    """A connection whose search_path is this system's schema (created and migrated if new)."""
    schema = schema_for(prefix)
    conn = await asyncpg.connect(dsn, **_login(dsn, kwargs))
    try:
        await _migrate(conn, schema)
        await conn.execute(f'SET search_path TO "{schema}"')
    except BaseException:
        await conn.close()
        raise
    return conn


async def create_pool(
    dsn: str, prefix: str, settings: dict[str, str] | None = None, **kwargs
) -> asyncpg.Pool:
    """A pool on the system's schema (migrated first); ``settings`` are extra session settings."""
    schema = schema_for(prefix)
    login = _login(dsn, {k: v for k, v in kwargs.items() if k in ("password", "passfile")})
    conn = await asyncpg.connect(dsn, **login)
    try:
        await _migrate(conn, schema)
    finally:
        await conn.close()
    server_settings = {"search_path": schema, **(settings or {})}
    return await asyncpg.create_pool(dsn, server_settings=server_settings, **{**kwargs, **login})
