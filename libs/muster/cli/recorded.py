"""Names the running system's Postgres projection records: jobs and queues, for shell completion and
for naming the job meant when one is mistyped.

The projection answers in one query on a connection the CLI opens anyway; reading the same from the
log (``muster.cli.live``) means reading the stream from its start.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING

from muster.cli.parsing import JOBS, LIVE_JOBS, QUEUES

if TYPE_CHECKING:
    import asyncpg

    from muster.runtime.settings import Endpoints

LIVE_STATUSES = ("pending", "running", "preempted")
"""A job in one of these has not finished: it runs, or will when it can (the projection's statuses:
muster.store.queries.JOB_STATUSES)."""


@contextlib.asynccontextmanager
async def projection(endpoints: Endpoints, **options) -> AsyncIterator[asyncpg.Connection]:
    """A connection to the system's projection, as its reader; ``options`` go to ``asyncpg.connect``."""
    from muster.store import connect

    conn = await connect(endpoints.reader_dsn, endpoints.prefix, **options)
    try:
        yield conn
    finally:
        await conn.close()


async def job_names(conn: asyncpg.Connection, prefix: str = "", *, live: bool = False) -> list[str]:
    """Names of the jobs the projection records that start with ``prefix``, sorted; with ``live``,
    only those not finished (cancelled, completed or failed)."""
    rows = await conn.fetch(
        "SELECT name FROM jobs WHERE starts_with(name, $1) AND ($2::text[] IS NULL OR status = ANY($2))"
        " ORDER BY name",
        prefix,
        list(LIVE_STATUSES) if live else None,
    )
    return [row["name"] for row in rows]


async def queue_names(conn: asyncpg.Connection, prefix: str = "") -> list[str]:
    """Names of the queues the system has (not deleted, not rejected) that start with ``prefix``, sorted."""
    rows = await conn.fetch(
        "SELECT name FROM queues WHERE status = 'active' AND starts_with(name, $1) ORDER BY name", prefix
    )
    return [row["name"] for row in rows]


async def _live_job_names(conn: asyncpg.Connection, prefix: str = "") -> list[str]:
    return await job_names(conn, prefix, live=True)


NAMES: dict[str, Callable[[asyncpg.Connection, str], Awaitable[list[str]]]] = {
    JOBS: job_names,
    LIVE_JOBS: _live_job_names,
    QUEUES: queue_names,
}
"""What each kind of completed name (``muster.cli.parsing.completes``) is read with."""
