"""Postgres: migrations, the projection's connection, and read queries."""

from __future__ import annotations

import re

import asyncpg


def schema_for(prefix: str) -> str:
    """The Postgres schema a system with this subject prefix keeps its tables in."""
    return re.sub(r"[^a-z0-9_]", "_", prefix.lower())


async def connect(dsn: str, prefix: str, **kwargs) -> asyncpg.Connection:
    """A connection whose search_path is this system's schema (created and migrated if new)."""
    from muster.store.migrate import migrate

    schema = schema_for(prefix)
    conn = await asyncpg.connect(dsn, **kwargs)
    await migrate(conn, schema)
    await conn.execute(f'SET search_path TO "{schema}"')
    return conn


async def create_pool(dsn: str, prefix: str, **kwargs) -> asyncpg.Pool:
    from muster.store.migrate import migrate

    schema = schema_for(prefix)
    conn = await asyncpg.connect(dsn)
    try:
        await migrate(conn, schema)
    finally:
        await conn.close()
    return await asyncpg.create_pool(dsn, server_settings={"search_path": schema}, **kwargs)
