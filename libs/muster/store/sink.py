"""Applies converted operations to Postgres, together with the checkpoint.

A batch is written set-wise: rows keyed by stream position are appended
with COPY (the checkpoint admits each message once, so they cannot clash);
new jobs and pods and each pod's folded change go through staging tables
and one statement each; the few order-sensitive updates (queues, nodes,
reasons) run in log order.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import asyncpg

from muster.bus import Delivery
from muster.events import envelope_parts
from muster.store import convert as c
from muster.store.convert import (
    REDERIVE_JOB_STATUS,
    RUNNING_POD_STATUSES,
    SET_RUNNING,
    Op,
    PodChange,
    convert,
)
from muster.store.facts import ProjectedFacts

# Appended rows addressed by stream position: COPY straight into the table.
_APPEND = {
    c.INSERT_EVENT: ("events", ("stream_seq", "idx", "subject", "type", "payload")),
    c.INSERT_DECISION: (
        "decisions",
        (
            "stream_seq",
            "idx",
            "pool",
            "cycle",
            "epoch",
            "kind",
            "job",
            "pod",
            "node",
            "gpus",
            "action",
            "for_job",
            "reason",
        ),
    ),
    c.INSERT_CYCLE: (
        "cycles",
        (
            "stream_seq",
            "idx",
            "pool",
            "cycle",
            "epoch",
            "watermark",
            "clock",
            "binds",
            "evictions",
            "config_digest",
        ),
    ),
    c.INSERT_DEAD_LETTER: (
        "dead_letters",
        ("stream_seq", "idx", "service", "subject", "original_seq", "error", "data"),
    ),
}
# Rows keyed by name, which a resubmission may repeat: COPY into a staging table, then insert what is new.
_JOB_COLUMNS = (
    "name", "queue", "kind", "pool", "priority", "preemptible", "min_available", "pods_total", "spec",
    "submitted_at", "created_seq",
)  # fmt: skip
_POD_COLUMNS = ("job", "idx", "gpu", "cpu", "memory", "updated_seq")
_CHANGE_COLUMNS = (
    "job", "idx", "status", "placed", "node", "gpus", "gpu_share", "updated_seq", "exit_code", "failure_reason",
)  # fmt: skip
_STAGING = (
    "CREATE TEMP TABLE IF NOT EXISTS stage_jobs ON COMMIT DELETE ROWS AS"
    f" SELECT {', '.join(_JOB_COLUMNS)} FROM jobs WITH NO DATA",
    f"CREATE TEMP TABLE IF NOT EXISTS stage_pods ON COMMIT DELETE ROWS AS SELECT {', '.join(_POD_COLUMNS)} FROM pods WITH NO DATA",
    "CREATE TEMP TABLE IF NOT EXISTS stage_pod_changes (job text, idx integer, status text, placed boolean, node text,"
    " gpus integer[], gpu_share double precision, updated_seq bigint, exit_code integer, failure_reason text)"
    " ON COMMIT DELETE ROWS",
)
_MERGE_JOBS = (
    f"INSERT INTO jobs ({', '.join(_JOB_COLUMNS)}, status, updated_seq)"
    f" SELECT {', '.join(_JOB_COLUMNS)}, 'pending', created_seq FROM stage_jobs ON CONFLICT (name) DO NOTHING"
)
_MERGE_PODS = (
    f"INSERT INTO pods ({', '.join(_POD_COLUMNS)}, status) SELECT {', '.join(_POD_COLUMNS)}, 'pending'"
    " FROM stage_pods ON CONFLICT (job, idx) DO NOTHING"
)
_MERGE_CHANGES = (
    "UPDATE pods p SET status = s.status, node = CASE WHEN s.placed THEN s.node ELSE p.node END,"
    " gpus = CASE WHEN s.placed THEN s.gpus ELSE p.gpus END,"
    " gpu_share = CASE WHEN s.placed THEN s.gpu_share ELSE p.gpu_share END, updated_seq = s.updated_seq,"
    " exit_code = s.exit_code, failure_reason = s.failure_reason"
    " FROM stage_pod_changes s WHERE p.job = s.job AND p.idx = s.idx"
    f" AND p.status NOT IN ({', '.join(repr(status) for status in c.FINISHED_POD_STATUSES)})"
)

_UNFINISHED_PODS = (
    "SELECT p.job, j.pods_total, p.idx, p.status, p.node FROM pods p JOIN jobs j ON j.name = p.job"
    " WHERE j.status <> 'deleted' AND p.status <> ALL($1::text[])"
)


@dataclass
class Plan:
    """One batch's writes, grouped by how they reach the database."""

    appends: dict[str, list[tuple]]
    """Insert statement (an _APPEND key) -> rows, for COPY."""
    jobs: list[tuple]
    pods: list[tuple]
    ordered: list[tuple[str, list[tuple]]]
    """Order-sensitive statements in log order, runs of one statement coalesced."""
    workloads_grouped: dict[str, tuple]
    ran: set[str]
    """Jobs that had a pod bound in this batch."""
    pod_changes: list[tuple]
    """Each pod's changes in the batch folded into one: the state the log leaves it in."""


def plan(ops: list[Op | PodChange]) -> Plan:
    """Group a batch's operations for set-wise writing, keeping the order that matters."""
    p = Plan(appends={}, jobs=[], pods=[], ordered=[], workloads_grouped={}, ran=set(), pod_changes=[])
    changes: dict[tuple[str, int], PodChange] = {}
    for op in ops:
        if isinstance(op, PodChange):
            key = (op.job, op.pod)
            changes[key] = changes[key].then(op) if key in changes else op
        elif op.sql in _APPEND:
            p.appends.setdefault(op.sql, []).append(op.args)
        elif op.sql == c.INSERT_JOB:
            p.jobs.append(op.args)
        elif op.sql == c.INSERT_POD:
            p.pods.append(op.args)
        elif op.sql == c.GROUPED_WORKLOAD:
            p.workloads_grouped[op.args[0]] = op.args
        elif op.sql == c.JOB_RAN:
            p.ran.add(op.args[0])
        elif p.ordered and p.ordered[-1][0] == op.sql:
            p.ordered[-1][1].append(op.args)
        else:
            p.ordered.append((op.sql, [op.args]))
    p.pod_changes = [change.args() for change in changes.values()]
    return p


async def write(conn: asyncpg.Connection, p: Plan) -> set[str]:
    """Execute a plan inside the caller's transaction; returns the jobs it leaves a pod running of."""
    for sql, rows in p.appends.items():
        table, columns = _APPEND[sql]
        await conn.copy_records_to_table(table, records=rows, columns=columns)
    if p.jobs or p.pods or p.pod_changes:
        for statement in _STAGING:
            await conn.execute(statement)
    if p.jobs:
        await conn.copy_records_to_table("stage_jobs", records=p.jobs, columns=_JOB_COLUMNS)
        await conn.execute(_MERGE_JOBS)
    if p.pods:
        await conn.copy_records_to_table("stage_pods", records=p.pods, columns=_POD_COLUMNS)
        await conn.execute(_MERGE_PODS)
    for sql, rows in p.ordered:
        await conn.executemany(sql, rows)
    if p.workloads_grouped:
        await conn.executemany(c.GROUPED_WORKLOAD, list(p.workloads_grouped.values()))
    if p.pod_changes:
        await conn.copy_records_to_table("stage_pod_changes", records=p.pod_changes, columns=_CHANGE_COLUMNS)
        # Only the changes that applied count: one to a finished pod does not.
        changed = await conn.fetch(_MERGE_CHANGES + " RETURNING p.job, p.status")
        return {job for job, status in changed if status in RUNNING_POD_STATUSES}
    return set()


class PostgresSink:
    """One transaction per batch: rows, re-derived job statuses and the checkpoint commit together."""

    def __init__(self, pool: asyncpg.Pool, consumer: str = "projector"):
        self.pool = pool
        self.consumer = consumer
        self._facts: ProjectedFacts | None = None

    async def checkpoint(self) -> int:
        """The last stream sequence projected (0 before the first)."""
        async with self.pool.acquire() as conn:
            return (
                await conn.fetchval("SELECT stream_seq FROM checkpoints WHERE consumer = $1", self.consumer)
                or 0
            )

    async def facts(self) -> ProjectedFacts:
        """Where the projection has each unfinished pod, each node's GPUs and each pool's epoch, read at
        one moment with the checkpoint they are the state of (``ProjectedFacts.seq``)."""
        async with self.pool.acquire() as conn, conn.transaction(isolation="repeatable_read", readonly=True):
            seq = await conn.fetchval("SELECT stream_seq FROM checkpoints WHERE consumer = $1", self.consumer)
            pods = await conn.fetch(_UNFINISHED_PODS, list(c.FINISHED_POD_STATUSES))
            nodes = await conn.fetch("SELECT name, gpus FROM nodes")
            epochs = await conn.fetch("SELECT pool, max(epoch) FROM cycles GROUP BY pool")
        return ProjectedFacts.load(seq or 0, map(tuple, pods), map(tuple, nodes), map(tuple, epochs))

    async def apply(self, deliveries: list[Delivery]) -> int:
        """Project the deliveries not yet applied, each fact checked as the projector checks it (this
        sink the only writer meanwhile); returns how many were new."""
        if self._facts is None:
            self._facts = await self.facts()
        refused, _ = self._facts.admit_all(deliveries)
        return await self.commit(Prepared(after=-1, deliveries=deliveries, refused=refused))

    async def commit(self, batch: Prepared) -> int:
        """Write a batch in one transaction with the checkpoint; returns how many messages were new.

        A batch prepared against the checkpoint it finds is written as it is; otherwise (another
        instance moved the checkpoint, or ``after`` is -1: not prepared) it is prepared again here, so
        nothing is applied twice whatever was prepared where.
        """
        async with self.pool.acquire() as conn, conn.transaction():
            await conn.execute(
                "INSERT INTO checkpoints (consumer, stream_seq) VALUES ($1, 0) ON CONFLICT DO NOTHING",
                self.consumer,
            )
            done = await conn.fetchval(
                "SELECT stream_seq FROM checkpoints WHERE consumer = $1 FOR UPDATE", self.consumer
            )
            if batch.after != done:
                batch = prepare(batch.deliveries, done, batch.refused)
            if batch.count == 0:
                return 0
            # A job with a pod the batch leaves bound (or releasing) is running, whatever its other pods
            # do: no need to count its pods. The others' status is derived from their pods' rows.
            running = await write(conn, batch.plan)
            for statement, jobs in ((SET_RUNNING, running), (REDERIVE_JOB_STATUS, batch.touched - running)):
                if jobs:
                    names = sorted(jobs)
                    await conn.execute(statement, names, [name in batch.plan.ran for name in names])
            await conn.execute(
                "UPDATE checkpoints SET stream_seq = $2 WHERE consumer = $1", self.consumer, batch.last
            )
            return batch.count


@dataclass
class Prepared:
    """A batch's writes, worked out against the checkpoint ``after`` (what is past it is new)."""

    after: int
    deliveries: list[Delivery]
    plan: Plan = field(default_factory=lambda: plan([]))
    touched: set[str] = field(default_factory=set)
    """Jobs whose status follows from their pods again."""
    last: int = 0
    count: int = 0
    """Messages past ``after``; 0: nothing to write."""
    refused: dict[int, frozenset[int]] = field(default_factory=dict)
    """Stream sequence -> the indexes of the facts in its message the projector refused."""


def prepare(
    deliveries: list[Delivery], after: int, refused: dict[int, frozenset[int]] | None = None
) -> Prepared:
    """Convert and plan the deliveries past stream position ``after`` (pure: no database), leaving out
    what ``refused`` names (stream sequence -> indexes of refused facts) but its ``events`` rows."""
    refused = refused or {}
    ops: list[Op | PodChange] = []
    touched: set[str] = set()
    last, count = after, 0
    for d in sorted(deliveries, key=lambda d: d.seq):
        if d.seq <= after:
            continue  # redelivered: already in the projection
        more, jobs = convert(
            d.seq,
            d.subject,
            d.events,
            envelope_parts(d.data) if d.data else None,
            refused.get(d.seq, frozenset()),
        )
        ops.extend(more)
        touched |= jobs
        last, count = d.seq, count + 1
    return Prepared(
        after=after,
        deliveries=deliveries,
        plan=plan(ops),
        touched=touched,
        last=last,
        count=count,
        refused=refused,
    )
