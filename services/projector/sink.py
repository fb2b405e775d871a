"""Applies converted operations to Postgres, together with the checkpoint."""

from __future__ import annotations

import asyncpg
from muster.bus import Delivery

from services.projector.convert import REDERIVE_JOB_STATUS, Op, convert


def coalesce(ops: list[Op]) -> list[tuple[str, list[tuple]]]:
    """Runs of the same statement become one executemany, keeping overall order."""
    runs: list[tuple[str, list[tuple]]] = []
    for op in ops:
        if runs and runs[-1][0] == op.sql:
            runs[-1][1].append(op.args)
        else:
            runs.append((op.sql, [op.args]))
    return runs


class PostgresSink:
    """One transaction per batch: rows, re-derived job statuses and the checkpoint commit together."""

    def __init__(self, pool: asyncpg.Pool, consumer: str = "projector"):
        self.pool = pool
        self.consumer = consumer

    async def apply(self, deliveries: list[Delivery]) -> int:
        """Project the deliveries not yet applied; returns how many were new."""
        async with self.pool.acquire() as conn, conn.transaction():
            await conn.execute(
                "INSERT INTO checkpoints (consumer, stream_seq) VALUES ($1, 0) ON CONFLICT DO NOTHING", self.consumer
            )
            done = await conn.fetchval(
                "SELECT stream_seq FROM checkpoints WHERE consumer = $1 FOR UPDATE", self.consumer
            )
            ops: list[Op] = []
            touched: set[str] = set()
            last = done
            for d in sorted(deliveries, key=lambda d: d.seq):
                if d.seq <= done:
                    continue  # redelivered: already in the projection
                more, jobs = convert(d.seq, d.subject, d.events)
                ops.extend(more)
                touched |= jobs
                last = d.seq
            if last == done:
                return 0
            for sql, rows in coalesce(ops):
                await conn.executemany(sql, rows)
            if touched:
                await conn.execute(REDERIVE_JOB_STATUS, sorted(touched))
            await conn.execute("UPDATE checkpoints SET stream_seq = $2 WHERE consumer = $1", self.consumer, last)
            return sum(1 for d in deliveries if d.seq > done)
