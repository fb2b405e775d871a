"""Applies converted operations to Postgres, together with the checkpoint."""

from __future__ import annotations

import asyncpg
from muster.bus import Delivery

from services.projector import convert as c
from services.projector.convert import REDERIVE_JOB_STATUS, Op, PodChange, convert

# Inserts of new rows: their order among themselves does not matter.
_INSERTS = {
    c.INSERT_EVENT,
    c.INSERT_DECISION,
    c.INSERT_CYCLE,
    c.INSERT_DEAD_LETTER,
    c.INSERT_JOB,
    c.INSERT_POD,
}
# Monotone updates of rows the inserts made: order-free too, but after them.
_AFTERWARDS = {c.GROUPED_WORKLOAD, c.JOB_RAN}


def plan(ops: list[Op | PodChange]) -> list[tuple[str, list[tuple]]]:
    """The statements for one batch, as few executemany calls as order allows.

    Inserts first, grouped by statement; then the order-sensitive updates in
    log order (runs of one statement coalesced); then monotone updates; then
    each pod's changes folded into one row update (a pod bound and evicted in
    the same batch is written once, as the log leaves it).
    """
    inserts: dict[str, list[tuple]] = {}
    ordered: list[tuple[str, list[tuple]]] = []
    afterwards: dict[str, list[tuple]] = {}
    pods: dict[tuple[str, int], PodChange] = {}
    for op in ops:
        if isinstance(op, PodChange):
            key = (op.job, op.pod)
            pods[key] = pods[key].then(op) if key in pods else op
        elif op.sql in _INSERTS:
            inserts.setdefault(op.sql, []).append(op.args)
        elif op.sql in _AFTERWARDS:
            afterwards.setdefault(op.sql, []).append(op.args)
        elif ordered and ordered[-1][0] == op.sql:
            ordered[-1][1].append(op.args)
        else:
            ordered.append((op.sql, [op.args]))
    runs = [*inserts.items(), *ordered, *afterwards.items()]
    if pods:
        runs.append((c.UPDATE_POD, [change.args() for change in pods.values()]))
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
                "INSERT INTO checkpoints (consumer, stream_seq) VALUES ($1, 0) ON CONFLICT DO NOTHING",
                self.consumer,
            )
            done = await conn.fetchval(
                "SELECT stream_seq FROM checkpoints WHERE consumer = $1 FOR UPDATE", self.consumer
            )
            ops: list[Op | PodChange] = []
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
            for sql, rows in plan(ops):
                await conn.executemany(sql, rows)
            if touched:
                await conn.execute(REDERIVE_JOB_STATUS, sorted(touched))
            await conn.execute(
                "UPDATE checkpoints SET stream_seq = $2 WHERE consumer = $1", self.consumer, last
            )
            return sum(1 for d in deliveries if d.seq > done)
