"""The projector: every event on the stream into Postgres."""

from __future__ import annotations

from muster.service import ServiceContext
from muster.store import create_pool

from services.projector.sink import PostgresSink


async def run(ctx: ServiceContext) -> None:
    pool = await create_pool(ctx.endpoints.pg_dsn, ctx.endpoints.prefix, min_size=1, max_size=2)
    try:
        sink = PostgresSink(pool)

        async def handle(deliveries) -> None:
            await sink.apply(deliveries)

        await ctx.bus.consume("projector", [ctx.subjects.all], handle, stop=ctx.stop, batch=1024)
    finally:
        await pool.close()
