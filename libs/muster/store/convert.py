"""Events in, database operations out: the projection as a pure function.

Every event becomes a row of the append-only ``events`` table plus the
projection updates it implies. Operations are plain (sql, args) pairs so
they can be tested without a database; the sink runs them in one
transaction with the checkpoint, so a redelivered event changes nothing.

A job's status is derived from its pods' rows, in one place
(``REDERIVE_JOB_STATUS``; ``SET_RUNNING`` is its shortcut for a job the batch
leaves a pod running of), first rule that holds:

- ``completed``: every pod completed.
- ``running``: a pod holds its node (bound, or releasing it).
- ``failed``: every pod has ended (completed or failed) and at least one
  failed. This is Kubernetes' rule for a pod's phase, one level up ("all
  containers have terminated, at least one in failure"). A job with a failed
  pod and another still pending or binding is not failed: the allocator
  still places that pod (as KAI's scheduler does: a failed pod just stops
  holding resources, and failing the workload is left to its controller,
  which muster does not have), so until it has run the job reads as
  waiting, with the allocator's reason. Nothing stops a failed pod's gang
  mates either, so a job whose pod failed while others still run is running.
- ``preempted``: none of the above, and a pod of it has run before.
- ``pending``: none of the above.

``deleted`` (PodGroupDeleted) is final and wins over all of these.
"""

from __future__ import annotations

from typing import NamedTuple

import msgspec

from muster.events import (
    BindFailed,
    BindRequested,
    CycleCompleted,
    DeadLettered,
    Event,
    EvictionRequested,
    NodeRegistered,
    NodeRemoved,
    NodeUpdated,
    PendingReasons,
    PodBound,
    PodCompleted,
    PodEvicted,
    PodFailed,
    PodGroupCreated,
    PodGroupDeleted,
    QueueDeleted,
    QueueRejected,
    QueueStatus,
    QueueUpserted,
    WorkloadRejected,
    WorkloadSubmitted,
    event_type,
)


# Plain tuples underneath: a batch makes several of these per event, and a frozen dataclass costs
# several times as much to create.
class Op(NamedTuple):
    sql: str
    args: tuple


# A pod that completed or failed is done for good: what the log says of it afterwards (a decision made
# before the allocator read the completion, the binder's refusal to bind it) changes nothing.
FINISHED_POD_STATUSES = ("completed", "failed")


class PodChange(NamedTuple):
    """A pod's new status, and where it is when the event says so.

    ``placement`` is (node, gpus, gpu_share); (None, [], 0.0) for a pod that
    left its node; None when the event does not say (the row keeps its node).
    ``exit_code`` and ``failure_reason``: how a failed pod ended (PodFailed).
    """

    job: str
    pod: int
    status: str
    seq: int
    placement: tuple[str | None, list[int], float] | None = None
    exit_code: int | None = None
    failure_reason: str | None = None

    def then(self, later: PodChange) -> PodChange:
        """This change followed by ``later``: later wins, but keeps a placement it does not state.

        A pod that finished stays finished (see FINISHED_POD_STATUSES)."""
        if self.status in FINISHED_POD_STATUSES:
            return self
        if later.placement is not None:
            return later
        return PodChange(
            later.job,
            later.pod,
            later.status,
            later.seq,
            self.placement,
            later.exit_code,
            later.failure_reason,
        )

    def args(self) -> tuple:
        node, gpus, share = self.placement or (None, [], 0.0)
        return (
            self.job,
            self.pod,
            self.status,
            self.placement is not None,
            node,
            gpus,
            share,
            self.seq,
            self.exit_code,
            self.failure_reason,
        )


def _json(value: object) -> str:
    return msgspec.json.encode(value).decode()


INSERT_EVENT = (
    "INSERT INTO events (stream_seq, idx, subject, type, payload) VALUES ($1, $2, $3, $4, $5::json)"
    " ON CONFLICT DO NOTHING"
)
UPSERT_WORKLOAD = (
    "INSERT INTO workloads (uid, kinds, status, error, field, submitted_at, updated_seq)"
    " VALUES ($1, $2, $3, $4, $5, $6, $7)"
    " ON CONFLICT (uid) DO UPDATE SET status = EXCLUDED.status, error = EXCLUDED.error, field = EXCLUDED.field,"
    " kinds = CASE WHEN cardinality(EXCLUDED.kinds) > 0 THEN EXCLUDED.kinds ELSE workloads.kinds END,"
    " updated_seq = EXCLUDED.updated_seq"
)
GROUPED_WORKLOAD = "UPDATE workloads SET status = 'grouped', updated_seq = $2 WHERE uid = $1"
UPSERT_QUEUE = (
    "INSERT INTO queues (name, parent, priority, spec, status, error, updated_seq)"
    " VALUES ($1, $2, $3, $4::jsonb, 'active', NULL, $5)"
    " ON CONFLICT (name) DO UPDATE SET parent = EXCLUDED.parent, priority = EXCLUDED.priority,"
    " spec = EXCLUDED.spec, status = 'active', error = NULL, updated_seq = EXCLUDED.updated_seq"
)
DELETE_QUEUE = "UPDATE queues SET status = 'deleted', updated_seq = $2 WHERE name = $1"
REJECT_QUEUE = (
    "INSERT INTO queues (name, parent, priority, spec, status, error, updated_seq)"
    " VALUES ($1, NULL, 100, '{}'::jsonb, 'rejected', $2, $3)"
    " ON CONFLICT (name) DO UPDATE SET error = EXCLUDED.error, updated_seq = EXCLUDED.updated_seq"
)
QUEUE_STATUS = (
    "UPDATE queues SET fair_share = $2::jsonb, allocated = $3::jsonb, requested = $4::jsonb, updated_seq = $5"
    " WHERE name = $1"
)
UPSERT_NODE = (
    "INSERT INTO nodes (name, pool, spec, gpus, cpu, memory, removed, updated_seq)"
    " VALUES ($1, $2, $3::jsonb, $4, $5, $6, false, $7)"
    " ON CONFLICT (name) DO UPDATE SET pool = EXCLUDED.pool, spec = EXCLUDED.spec, gpus = EXCLUDED.gpus,"
    " cpu = EXCLUDED.cpu, memory = EXCLUDED.memory, removed = false, updated_seq = EXCLUDED.updated_seq"
)
REMOVE_NODE = "UPDATE nodes SET removed = true, updated_seq = $2 WHERE name = $1"
INSERT_JOB = (
    "INSERT INTO jobs (name, queue, kind, pool, priority, preemptible, min_available, pods_total, spec, status,"
    " submitted_at, created_seq, updated_seq) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9::json, 'pending', $10, $11, $11)"
    " ON CONFLICT (name) DO NOTHING"
)
INSERT_POD = (
    "INSERT INTO pods (job, idx, status, gpu, cpu, memory, updated_seq) VALUES ($1, $2, 'pending', $3, $4, $5, $6)"
    " ON CONFLICT (job, idx) DO NOTHING"
)
DELETE_JOB = "UPDATE jobs SET status = 'deleted', updated_seq = $2 WHERE name = $1"
# One statement for every pod change: the sink folds a batch's changes per pod first.
UPDATE_POD = (
    "UPDATE pods SET status = $3, node = CASE WHEN $4 THEN $5 ELSE node END,"
    " gpus = CASE WHEN $4 THEN $6::integer[] ELSE gpus END, gpu_share = CASE WHEN $4 THEN $7 ELSE gpu_share END,"
    " updated_seq = $8, exit_code = $9, failure_reason = $10 WHERE job = $1 AND idx = $2"
)
# Not run as such: the sink folds these into the status re-derivation ($2 of REDERIVE_JOB_STATUS).
JOB_RAN = "UPDATE jobs SET ever_ran = true WHERE name = $1"
INSERT_DECISION = (
    "INSERT INTO decisions (stream_seq, idx, pool, cycle, epoch, kind, job, pod, node, gpus, action, for_job, reason)"
    " VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13) ON CONFLICT DO NOTHING"
)
INSERT_CYCLE = (
    "INSERT INTO cycles (stream_seq, idx, pool, cycle, epoch, watermark, clock, binds, evictions, config_digest)"
    " VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) ON CONFLICT DO NOTHING"
)
JOB_REASON = "UPDATE jobs SET reason = NULLIF($2, '') WHERE name = $1"
INSERT_DEAD_LETTER = (
    "INSERT INTO dead_letters (stream_seq, idx, service, subject, original_seq, error, data)"
    " VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT DO NOTHING"
)


def _pod_resources(group: PodGroupCreated) -> list[tuple[float, int, int]]:
    out = []
    for spec in group.pods:
        r = spec.resources
        out.extend([(r.gpu, r.cpu, r.memory)] * spec.count)
    return out


def _reason_ops(reasons: dict[str, str]) -> list[Op]:
    """Each job's new pending reason, in job order ('' clears it)."""
    return [Op(JOB_REASON, (job, reason)) for job, reason in sorted(reasons.items())]


def convert(
    seq: int,
    subject: str,
    events: list[Event],
    parts: list[bytes] | None = None,
    refused: frozenset[int] = frozenset(),
) -> tuple[list[Op | PodChange], set[str]]:
    """Operations for one message, and the jobs whose status must be re-derived.

    ``parts``: each event's JSON as it travelled (``envelope_parts``); the log keeps it verbatim.
    Without it, each event is encoded again. ``refused``: the indexes of facts the projector's state
    refutes (``muster.store.facts``): kept in ``events``, projected nowhere else.
    """
    ops: list[Op | PodChange] = []
    touched: set[str] = set()
    if parts is None or len(parts) != len(events):
        parts = [msgspec.json.encode(event) for event in events]
    for idx, event in enumerate(events):
        payload = parts[idx].decode()
        ops.append(Op(INSERT_EVENT, (seq, idx, subject, event_type(event), payload)))
        if refused and idx in refused:
            continue
        match event:
            # What every pod brings comes first: a match tries its cases in order.
            case PodGroupCreated() as group:
                if group.workload_uid:
                    ops.append(Op(GROUPED_WORKLOAD, (group.workload_uid, seq)))
                pods = _pod_resources(group)
                ops.append(
                    Op(
                        INSERT_JOB,
                        (
                            group.name,
                            group.queue,
                            group.kind,
                            group.pool,
                            group.priority,
                            group.preemptible,
                            group.min_available,
                            len(pods),
                            payload,
                            group.submitted_at,
                            seq,
                        ),
                    )
                )
                ops.extend(
                    Op(INSERT_POD, (group.name, i, gpu, cpu, mem, seq))
                    for i, (gpu, cpu, mem) in enumerate(pods)
                )
            case BindRequested() as b:
                ops.append(
                    Op(
                        INSERT_DECISION,
                        (seq, idx, b.pool, b.cycle, b.epoch, "bind", b.job, b.pod, b.node, b.gpus, "allocate", None,
                         "pipelined" if b.pipelined else ""),
                    )
                )  # fmt: skip
                ops.append(PodChange(b.job, b.pod, "binding", seq, (b.node, b.gpus, b.gpu_share)))
            case PodBound() as b:
                ops.append(PodChange(b.job, b.pod, "bound", seq, (b.node, b.gpus, b.gpu_share)))
                ops.append(Op(JOB_RAN, (b.job,)))
                touched.add(b.job)
            case WorkloadSubmitted(uid=uid, manifests=docs, submitted_at=at):
                kinds = [str(d.get("kind", "")) for d in docs if isinstance(d, dict)]
                ops.append(Op(UPSERT_WORKLOAD, (uid, kinds, "submitted", None, None, at, seq)))
            case WorkloadRejected(uid=uid, error=error, field=field):
                ops.append(Op(UPSERT_WORKLOAD, (uid, [], "rejected", error, field, None, seq)))
            case PodGroupDeleted(name=name):
                ops.append(Op(DELETE_JOB, (name, seq)))
            case QueueUpserted(queue=q):
                ops.append(Op(UPSERT_QUEUE, (q.name, q.parent, q.priority, _json(q), seq)))
            case QueueDeleted(name=name):
                ops.append(Op(DELETE_QUEUE, (name, seq)))
            case QueueRejected(name=name, error=error, field=field):
                ops.append(Op(REJECT_QUEUE, (name, f"{field}: {error}" if field else error, seq)))
            case QueueStatus(name=name, fair_share=fs, allocated=al, requested=rq):
                ops.append(Op(QUEUE_STATUS, (name, _json(fs), _json(al), _json(rq), seq)))
            case NodeRegistered(node=n) | NodeUpdated(node=n):
                r = n.resources
                ops.append(Op(UPSERT_NODE, (n.name, n.pool, _json(n), int(r.gpu), r.cpu, r.memory, seq)))
            case NodeRemoved(name=name):
                ops.append(Op(REMOVE_NODE, (name, seq)))
            case EvictionRequested() as e:
                ops.append(
                    Op(
                        INSERT_DECISION,
                        (seq, idx, e.pool, e.cycle, e.epoch, "evict", e.job, e.pod, e.node, [], e.action, e.for_job,
                         e.reason),
                    )
                )  # fmt: skip
                ops.append(PodChange(e.job, e.pod, "releasing", seq))
                touched.add(e.job)
            case CycleCompleted() as c:
                ops.append(
                    Op(
                        INSERT_CYCLE,
                        (seq, idx, c.pool, c.cycle, c.epoch, c.watermark, c.clock, c.binds, c.evictions,
                         c.config_digest),
                    )
                )  # fmt: skip
                ops.extend(_reason_ops(c.pending))
            case PendingReasons(reasons=reasons):
                # The rest of its cycle's reasons, which its CycleCompleted does not carry.
                ops.extend(_reason_ops(reasons))
            case BindFailed(job=job, pod=pod):
                ops.append(PodChange(job, pod, "pending", seq, (None, [], 0.0)))
                touched.add(job)
            case PodEvicted(job=job, pod=pod):
                ops.append(PodChange(job, pod, "pending", seq, (None, [], 0.0)))
                touched.add(job)
            case PodCompleted(job=job, pod=pod):
                ops.append(PodChange(job, pod, "completed", seq))
                touched.add(job)
            case DeadLettered() as d:
                ops.append(
                    Op(INSERT_DEAD_LETTER, (seq, idx, d.service, d.subject, d.stream_seq, d.error, d.data))
                )
            case PodFailed(job=job, pod=pod, exit_code=code, reason=reason):
                ops.append(PodChange(job, pod, "failed", seq, None, code, reason or None))
                touched.add(job)
            case _:  # NodeLost: the events row; the NodeRemoved after it marks the node
                pass
    return ops, touched


# Pods in these states hold their node: a job with one is running (REDERIVE_JOB_STATUS's `bound`).
RUNNING_POD_STATUSES = ("bound", "releasing")
# Both status statements take the jobs as two aligned arrays: names ($1) and whether a pod of the job
# was bound in the batch ($2). They join against them rather than test `name = ANY($1)` row by row:
# a prepared statement's array is not hashed, and a batch of 60k jobs then cost 60k x 60k comparisons.
SET_RUNNING = """
UPDATE jobs j SET status = 'running', ever_ran = j.ever_ran OR t.ran
FROM unnest($1::text[], $2::boolean[]) AS t(name, ran)
WHERE j.name = t.name AND j.status <> 'deleted'
"""
# Job status follows from its pods: the rules, and why, are in this module's docstring.
REDERIVE_JOB_STATUS = """
UPDATE jobs j SET ever_ran = j.ever_ran OR c.ran, status = CASE
        WHEN c.completed = j.pods_total THEN 'completed'
        WHEN c.bound > 0 THEN 'running'
        WHEN c.failed > 0 AND c.completed + c.failed = j.pods_total THEN 'failed'
        WHEN j.ever_ran OR c.ran THEN 'preempted'
        ELSE 'pending' END
FROM (SELECT t.name AS job, t.ran,
             count(*) FILTER (WHERE p.status = 'completed') AS completed,
             count(*) FILTER (WHERE p.status IN ('bound', 'releasing')) AS bound,
             count(*) FILTER (WHERE p.status = 'failed') AS failed
      FROM unnest($1::text[], $2::boolean[]) AS t(name, ran) JOIN pods p ON p.job = t.name
      GROUP BY t.name, t.ran) c
WHERE j.name = c.job AND j.status <> 'deleted'
"""
