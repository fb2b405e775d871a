"""The projector: every event on the stream into Postgres."""

from __future__ import annotations

import asyncio
import logging

import asyncpg
from muster.service import ServiceContext
from muster.store import create_pool

from services.projector.sink import PostgresSink

log = logging.getLogger(__name__)

# The database going away is not the message's fault: wait for it instead of
# retrying the batch into the dead-letter subject, which would leave a hole in the projection.
DATABASE_DOWN = (
    OSError,
    asyncio.TimeoutError,
    asyncpg.PostgresConnectionError,
    asyncpg.exceptions.OperatorInterventionError,
    asyncpg.InterfaceError,
)
RETRY_SECONDS = 1.0


async def until_database_answers(ctx: ServiceContext, attempt):
    """``await attempt()`` again and again while Postgres is unreachable; gives up only when stopping."""
    while True:
        try:
            return await attempt()
        except DATABASE_DOWN as exc:
            if ctx.stop.is_set():
                raise
            log.warning("postgres unreachable (%s); retrying in %.0fs", exc, RETRY_SECONDS)
            await asyncio.sleep(RETRY_SECONDS)


async def run(ctx: ServiceContext) -> None:
    pool = await until_database_answers(
        ctx, lambda: create_pool(ctx.endpoints.pg_dsn, ctx.endpoints.prefix, min_size=1, max_size=2)
    )
    try:
        sink = PostgresSink(pool)

        async def handle(deliveries) -> None:
            await until_database_answers(ctx, lambda: sink.apply(deliveries))

        await ctx.bus.consume("projector", [ctx.subjects.all], handle, stop=ctx.stop, batch=1024)
    finally:
        await pool.close()
