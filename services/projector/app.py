"""The projector: every event on the stream into Postgres.

A message Postgres refuses for good (``muster.store.refusals``: a value out of
its column's range, an index row too big) is dead-lettered with the refusal and
passed over, found by writing its batch again one message at a time; anything
else that fails a write is tried again from the checkpoint, the database going
away included, so nothing is lost to a failure that passes.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging

import asyncpg
from muster.bus import Delivery
from muster.retention import RetentionPolicy, keep_bounded
from muster.service import ServiceContext
from muster.store import create_pool
from muster.store.refusals import reason, refused_for_good
from muster.store.sink import PostgresSink, Prepared

from services.projector.pipeline import Pipeline

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
NAME = "projector"
"""Whose name the projector's dead letters carry."""
# The projector's statements are small keyed writes, run hundreds of times a minute. Postgres' JIT
# compiles any statement it estimates costly (a growing table's status update soon is), at tens of
# milliseconds a time: far more than the statement itself.
SESSION_SETTINGS = {"jit": "off"}


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


async def commit_refusing(ctx: ServiceContext, sink: PostgresSink, batch: Prepared) -> int:
    """Commit ``batch``; if Postgres refuses it for good, commit its messages one at a time instead,
    dead-lettering each one refused (with why) and moving the checkpoint past it."""
    try:
        return await until_database_answers(ctx, functools.partial(sink.commit, batch))
    except Exception as exc:
        if not refused_for_good(exc):
            raise
        log.warning(
            "a batch of %d messages was refused (%s); writing them one by one", len(batch.deliveries), exc
        )
    written = 0
    for delivery in sorted(batch.deliveries, key=lambda d: d.seq):
        try:
            one = Prepared(after=-1, deliveries=[delivery], refused=batch.refused)
            written += await until_database_answers(ctx, functools.partial(sink.commit, one))
        except Exception as exc:
            if not refused_for_good(exc):
                raise
            # Lettered before the checkpoint passes it: a crash between the two letters it again
            # (under the same message id), never loses it.
            await ctx.bus.dead_letter(NAME, delivery.subject, delivery.seq, reason(exc), delivery.data)
            passed = Prepared(after=-1, deliveries=[Delivery(delivery.subject, delivery.seq, [])])
            written += await until_database_answers(ctx, functools.partial(sink.commit, passed))
    return written


async def keep_stream_bounded(ctx: ServiceContext, sink: PostgresSink, policy: RetentionPolicy, every: float):
    """Purge what the archive holds and every fold can do without, once per ``every`` seconds."""
    while not ctx.stop.is_set():
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(ctx.stop.wait(), every)
        if ctx.stop.is_set():
            return
        try:
            archived = await sink.checkpoint()
            await keep_bounded(ctx.bus, policy, archived)
        except Exception:  # noqa: BLE001 — retention waits for the next look; projection goes on
            log.warning("stream retention skipped this time", exc_info=True)


async def run(ctx: ServiceContext) -> None:
    policy = RetentionPolicy.from_env(ctx.settings.extra)
    pool = await until_database_answers(
        ctx,
        lambda: create_pool(
            ctx.endpoints.pg_dsn, ctx.endpoints.prefix, settings=SESSION_SETTINGS, min_size=1, max_size=2
        ),
    )
    keeper = None
    try:
        sink = PostgresSink(pool)
        if policy is not None:
            every = float(ctx.settings.extra.get("MUSTER_RETENTION_INTERVAL", "30"))
            keeper = asyncio.create_task(keep_stream_bounded(ctx, sink, policy, every))

        def commit(batch: Prepared):
            return commit_refusing(ctx, sink, batch)

        # The projector's position is its checkpoint in Postgres, written with its rows: it reads the
        # stream strictly in order from there. (A durable consumer would redeliver a killed
        # instance's unacknowledged messages after newer ones, behind the checkpoint.)
        async def letter(delivery: Delivery, why: str) -> None:
            await ctx.bus.dead_letter(NAME, delivery.subject, delivery.seq, why, delivery.data)

        while not ctx.stop.is_set():
            # Where the projection has each pod, read with the checkpoint: each fact is checked against
            # it (``muster.store.facts``), and it is rebuilt from the rows at every resumption.
            facts = await until_database_answers(ctx, sink.facts)
            done = facts.seq
            pipeline = Pipeline(done, commit, facts, letter)
            try:
                # A message readers refuse is dead-lettered (under the projector's name) and not projected.
                await ctx.bus.follow(done + 1, pipeline.handle, stop=ctx.stop, batch=1024, name=NAME)
                await pipeline.drain()
            except Exception:
                log.warning("projection stopped at a failure; resuming from the checkpoint", exc_info=True)
                with contextlib.suppress(Exception):
                    await pipeline.drain()
                await asyncio.sleep(RETRY_SECONDS)
    finally:
        if keeper is not None:
            keeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await keeper
        await pool.close()
