"""Read-side queries over the projection, in the shapes the CLI prints."""

from __future__ import annotations

import json
from collections.abc import Iterable

import asyncpg

from muster.store.timeline import failure_line
from muster.tolerances import UNLIMITED

JOB_STATUSES = ("pending", "running", "preempted", "completed", "failed", "deleted")
"""Every status a job's row can have; libs/muster/store/convert.py says how its pods decide it."""

_LIVE_POD = ("bound", "releasing")
_FAILED_PODS = (
    "SELECT job, idx, node, exit_code, failure_reason FROM pods WHERE status = 'failed'"
    " AND ($1::text[] IS NULL OR job = ANY($1::text[])) ORDER BY job, idx"
)


async def failures(conn: asyncpg.Connection, jobs: Iterable[str] | None = None) -> dict[str, list[dict]]:
    """The failed pods of ``jobs`` (None: of every job), by job: pod, node, exit_code, reason."""
    out: dict[str, list[dict]] = {}
    names = None if jobs is None else list(jobs)
    for row in await conn.fetch(_FAILED_PODS, names):
        out.setdefault(row["job"], []).append(
            {
                "pod": row["idx"],
                "node": row["node"],
                "exit_code": row["exit_code"],
                "reason": row["failure_reason"],
            }
        )
    return out


def failure_text(failed: list[dict]) -> str:
    """How a job's pods failed, in one line: the first failure, and how many more there were."""
    if not failed:
        return ""
    first = failed[0]
    text = failure_line(f"pod {first['pod']}", first["node"] or "", first["exit_code"], first["reason"])
    more = len(failed) - 1
    return text + (f"; {more} more pod{'s' if more > 1 else ''} failed" if more else "")


def _user_units(values: dict[str, float]) -> dict[str, float]:
    """Queue figures travel in base units (cpu millicores); users read cpu in cores."""
    return {k: (v / 1000.0 if k == "cpu" else float(v)) for k, v in sorted(values.items())}


def _quota_and_limit(spec: dict) -> dict[str, dict[str, float | None]]:
    """A queue's ``quota`` (deserved) and ``limit`` per resource it names, in user units; None where
    unset (-1). A queue naming no gpu has a gpu quota of 0 and no gpu limit, as the allocator reads it."""
    resources = {"gpu": {"quota": 0.0}, **spec.get("resources", {})}
    out: dict[str, dict[str, float | None]] = {"quota": {}, "limit": {}}
    for key in out:
        for name, bounds in sorted(resources.items()):
            value = bounds.get(key, UNLIMITED)
            out[key][name] = None if value == UNLIMITED else _user_units({name: value})[name]
    return out


async def status(conn: asyncpg.Connection) -> dict:
    """The live system in ``muster simulate --json``'s shape, plus nodes.

    Beyond that shape: a job with a failed pod has ``failures`` (pod, node, exit_code, reason),
    and a ``failed`` job's ``reason`` says how it failed; a queue has its ``parent``, and its ``quota``
    and ``limit`` per resource (None: not set).
    """
    jobs: dict[str, dict] = {}
    for row in await conn.fetch(
        "SELECT name, queue, status, reason FROM jobs WHERE status <> 'deleted' ORDER BY submitted_at, name"
    ):
        jobs[row["name"]] = {
            "status": row["status"],
            "queue": row["queue"],
            "pods": [],
            "reason": row["reason"],
        }
    for row in await conn.fetch(
        "SELECT job, node, gpus FROM pods WHERE status = ANY($1::text[]) ORDER BY job, idx", list(_LIVE_POD)
    ):
        if row["job"] in jobs:
            jobs[row["job"]]["pods"].append({"node": row["node"], "gpus": list(row["gpus"])})
    for name, failed in (await failures(conn)).items():
        job = jobs.get(name)
        if job is not None:
            # Only where a pod failed: every other job keeps `muster simulate --json`'s shape.
            job["failures"] = failed
            if job["status"] == "failed":
                job["reason"] = failure_text(failed)
    for job in jobs.values():
        if job["status"] == "running":
            job["reason"] = None
    queues = {
        row["name"]: {
            "parent": row["parent"],
            "fair_share": _user_units(json.loads(row["fair_share"])),
            "allocated": _user_units(json.loads(row["allocated"])),
            **_quota_and_limit(json.loads(row["spec"])),
        }
        for row in await conn.fetch("SELECT * FROM queues WHERE status = 'active' ORDER BY name")
    }
    used = {
        row["node"]: row
        for row in await conn.fetch(
            "SELECT node, sum(gpu) AS gpu, sum(cpu)::bigint AS cpu, sum(memory)::bigint AS memory FROM pods"
            " WHERE status IN ('binding', 'bound', 'releasing') AND node IS NOT NULL GROUP BY node"
        )
    }
    nodes = {}
    for row in await conn.fetch("SELECT * FROM nodes WHERE NOT removed ORDER BY name"):
        u = used.get(row["name"])
        total = {"gpu": float(row["gpus"]), "cpu": row["cpu"] / 1000.0, "memory": float(row["memory"])}
        taken = {"gpu": float(u["gpu"]), "cpu": u["cpu"] / 1000.0, "memory": float(u["memory"])} if u else {}
        nodes[row["name"]] = {
            "pool": row["pool"],
            "total": total,
            "free": {k: total[k] - taken.get(k, 0.0) for k in total},
        }
    return {"jobs": jobs, "queues": queues, "nodes": nodes}


async def evictions_by_action(conn: asyncpg.Connection) -> dict[str, dict[str, int]]:
    """Evictions decided so far, per action (reclaim, preempt, consolidate...): pods and jobs."""
    rows = await conn.fetch(
        "SELECT coalesce(action, 'evict') AS action, count(*) AS pods, count(DISTINCT job) AS jobs"
        " FROM decisions WHERE kind = 'evict' GROUP BY 1 ORDER BY 1"
    )
    return {row["action"]: {"pods": row["pods"], "jobs": row["jobs"]} for row in rows}


async def first_eviction(conn: asyncpg.Connection) -> tuple[str, str | None] | None:
    """The first job evicted, and the job it made room for (if any); None when nothing was."""
    row = await conn.fetchrow(
        "SELECT job, for_job FROM decisions WHERE kind = 'evict' ORDER BY stream_seq, idx LIMIT 1"
    )
    return None if row is None else (row["job"], row["for_job"])
