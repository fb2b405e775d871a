"""The embedded Postgres wants passwords; the projector's role writes, the reader's only reads."""

from __future__ import annotations

import asyncio

import asyncpg
import pytest
from muster.runtime.security import PG_READER, PG_WRITER, setup_postgres_roles
from muster.store import StoreAccessError, connect

pytestmark = pytest.mark.postgres


async def _make_roles(pg) -> None:
    admin = await asyncpg.connect(pg.dsn("postgres"), password=pg.passwords["postgres"])
    try:
        await setup_postgres_roles(admin, "muster", pg.passwords)
    finally:
        await admin.close()
    writer = await connect(pg.dsn(PG_WRITER), "muster", password=pg.passwords[PG_WRITER])
    await writer.close()


@pytest.fixture(scope="module")
def roles(secured_pg):
    """Roles made by the superuser, then the schema migrated by the writer, as `muster up` does."""
    asyncio.run(_make_roles(secured_pg))
    return secured_pg


async def reader(pg) -> asyncpg.Connection:
    return await connect(pg.dsn(PG_READER), "muster", password=pg.passwords[PG_READER])


async def test_the_superuser_without_a_password_is_refused(secured_pg):
    with pytest.raises(asyncpg.InvalidPasswordError):
        await asyncpg.connect(secured_pg.dsn("postgres"), password="")


async def test_a_wrong_password_is_refused(roles):
    with pytest.raises(asyncpg.InvalidPasswordError):
        await asyncpg.connect(roles.dsn(PG_READER), password="guess")


async def test_the_reader_may_select_from_the_projection(roles):
    conn = await reader(roles)
    try:
        assert await conn.fetchval("SELECT count(*) FROM jobs") == 0
    finally:
        await conn.close()


async def test_the_reader_may_not_insert(roles):
    conn = await reader(roles)
    try:
        with pytest.raises(asyncpg.InsufficientPrivilegeError):
            await conn.execute("INSERT INTO schema_migrations (version, name) VALUES (9999, 'forged')")
    finally:
        await conn.close()


async def test_the_reader_may_not_create_tables(roles):
    conn = await reader(roles)
    try:
        with pytest.raises(asyncpg.InsufficientPrivilegeError):
            await conn.execute("CREATE TABLE muster.forged (x int)")
        with pytest.raises(asyncpg.InsufficientPrivilegeError):
            await conn.execute("CREATE TABLE public.forged (x int)")
    finally:
        await conn.close()


async def test_the_writer_may_insert(roles):
    conn = await connect(roles.dsn(PG_WRITER), "muster", password=roles.passwords[PG_WRITER])
    try:
        async with conn.transaction():
            await conn.execute("INSERT INTO schema_migrations (version, name) VALUES (9998, 'probe')")
            await conn.execute("DELETE FROM schema_migrations WHERE version = 9998")
    finally:
        await conn.close()


async def test_a_reader_cannot_create_a_missing_schema_and_is_told_why(roles):
    with pytest.raises(StoreAccessError, match="may not create or migrate schema 'elsewhere'"):
        await connect(roles.dsn(PG_READER), "elsewhere", password=roles.passwords[PG_READER])


async def test_tables_the_writer_creates_later_are_readable(roles):
    writer = await connect(roles.dsn(PG_WRITER), "muster", password=roles.passwords[PG_WRITER])
    try:
        await writer.execute("CREATE TABLE IF NOT EXISTS later_table (x int)")
        await writer.execute("INSERT INTO later_table VALUES (1)")
    finally:
        await writer.close()
    conn = await reader(roles)
    try:
        assert await conn.fetchval("SELECT count(*) FROM later_table") == 1
    finally:
        await conn.close()
