"""What the dashboard reads from the projection, shaped for the page.

Every figure leaves here in user units: gpu in devices, cpu in cores,
memory in bytes. Reads go to Postgres only; the page never sees the bus.
The pure shaping functions (``queue_tree``, ``gpu_map``) are separate from
the SQL so they can be tested without a database.
"""

from __future__ import annotations

import datetime
import json
from typing import Any

from muster.store import timeline
from muster.store.queries import JOB_STATUSES, failure_text, failures

RESOURCES = ("gpu", "cpu", "memory")
# Pods that hold a place on a node right now (binding already reserves it).
_PLACED = ["binding", "bound", "releasing"]


def _user(resource: str, value: float) -> float:
    """Base units to user units: millicores become cores; -1 (unlimited) stays -1."""
    if resource == "cpu" and value != -1:
        return value / 1000.0
    return float(value)


def _loads(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str | bytes) else value


# -- queues ------------------------------------------------------------------


def queue_tree(rows: list[dict[str, Any]], job_counts: dict[str, dict[str, int]]) -> list[dict[str, Any]]:
    """Queues as a forest: each node has its figures per resource and its ``children``.

    ``rows`` are queue rows (name, parent, priority, spec, fair_share, allocated,
    requested); a queue whose parent is unknown is shown at the top level, so a
    half-applied hierarchy still appears. Siblings keep creation order, then name.
    """
    nodes: dict[str, dict[str, Any]] = {}
    for row in rows:
        spec = _loads(row["spec"]) or {}
        fair, alloc, req = (_loads(row[k]) or {} for k in ("fair_share", "allocated", "requested"))
        declared = spec.get("resources", {})
        resources = {}
        for r in RESOURCES:
            q = declared.get(r, {})
            # Spec defaults (kai-semantics): gpu quota 0, anything else unconstrained.
            quota = q.get("quota", 0.0 if r == "gpu" else -1.0)
            resources[r] = {
                "quota": _user(r, quota),
                "limit": _user(r, q.get("limit", -1.0)),
                "over_quota_weight": float(q.get("over_quota_weight", 1.0)),
                "fair_share": _user(r, fair.get(r, 0.0)),
                "allocated": _user(r, alloc.get(r, 0.0)),
                "requested": _user(r, req.get(r, 0.0)),
            }
        counts = job_counts.get(row["name"], {})
        nodes[row["name"]] = {
            "name": row["name"],
            "parent": row["parent"],
            "priority": row["priority"],
            "order": spec.get("order", 0),
            "resources": resources,
            "jobs": {s: counts.get(s, 0) for s in JOB_STATUSES if s != "deleted"},
            "children": [],
            "missing": False,
        }
    roots: list[dict[str, Any]] = []
    for name in sorted(nodes, key=lambda n: (nodes[n]["order"], n)):
        node = nodes[name]
        parent = nodes.get(node["parent"] or "")
        (parent["children"] if parent is not None else roots).append(node)
    for node in nodes.values():
        if node["children"]:
            # A parent's job counts are its subtree's, so the tree reads top-down.
            node["jobs"] = {s: _subtree_jobs(node, s) for s in node["jobs"]}
    return roots + _missing_queues(nodes, job_counts)


def _missing_queues(known: dict[str, Any], job_counts: dict[str, dict[str, int]]) -> list[dict[str, Any]]:
    """Queues that jobs name but that do not exist (never made, or deleted): shown last, so their jobs,
    which wait for ever, are not left out of the page."""
    zero = {
        "quota": 0.0,
        "limit": -1.0,
        "over_quota_weight": 0.0,
        "fair_share": 0.0,
        "allocated": 0.0,
        "requested": 0.0,
    }
    return [
        {
            "name": name,
            "parent": None,
            "priority": None,
            "order": None,
            "resources": {r: dict(zero) for r in RESOURCES},
            "jobs": {s: job_counts[name].get(s, 0) for s in JOB_STATUSES if s != "deleted"},
            "children": [],
            "missing": True,
        }
        for name in sorted(set(job_counts) - set(known))
        if any(job_counts[name].values())
    ]


def _subtree_jobs(node: dict[str, Any], status: str) -> int:
    own = node["jobs"].get(status, 0) if not node["children"] else 0
    return own + sum(_subtree_jobs(c, status) for c in node["children"])


def descendants(tree: list[dict[str, Any]], name: str) -> list[str]:
    """``name`` and every queue under it, or [] if there is no such queue."""

    def find(nodes: list[dict[str, Any]]) -> dict[str, Any] | None:
        for n in nodes:
            if n["name"] == name:
                return n
            hit = find(n["children"])
            if hit is not None:
                return hit
        return None

    def walk(n: dict[str, Any]) -> list[str]:
        return [n["name"], *(q for c in n["children"] for q in walk(c))]

    found = find(tree)
    return walk(found) if found is not None else []


async def queues(conn) -> list[dict[str, Any]]:
    rows = await conn.fetch(
        "SELECT name, parent, priority, spec, fair_share, allocated, requested FROM queues"
        " WHERE status = 'active' ORDER BY name"
    )
    counts: dict[str, dict[str, int]] = {}
    for r in await conn.fetch(
        "SELECT queue, status, count(*)::int AS n FROM jobs WHERE status <> 'deleted' GROUP BY queue, status"
    ):
        counts.setdefault(r["queue"], {})[r["status"]] = r["n"]
    return queue_tree([dict(r) for r in rows], counts)


# -- jobs --------------------------------------------------------------------

_JOB_COLUMNS = """
    j.name, j.queue, j.kind, j.pool, j.priority, j.preemptible, j.min_available, j.pods_total, j.status,
    CASE WHEN j.status = 'running' THEN NULL ELSE j.reason END AS reason,
    j.submitted_at, j.created_seq, j.updated_seq,
    coalesce(p.running, 0)::int AS pods_running, coalesce(p.gpu, 0)::float8 AS gpu,
    coalesce(p.cpu, 0)::float8 / 1000.0 AS cpu, coalesce(p.memory, 0)::float8 AS memory
"""
# Per job, looked up by the pods primary key: only the jobs a page shows are aggregated.
_JOB_PODS = """
LEFT JOIN LATERAL (SELECT count(*) FILTER (WHERE status IN ('bound', 'releasing')) AS running,
                          sum(gpu) AS gpu, sum(cpu) AS cpu, sum(memory) AS memory
                   FROM pods WHERE pods.job = j.name) p ON true
"""


async def jobs(
    conn,
    *,
    in_queues: list[str] | None = None,
    status: str | None = None,
    search: str | None = None,
    limit: int = 200,
) -> dict[str, Any]:
    """Jobs newest first, filtered; ``total`` counts every match, ``jobs`` at most ``limit`` of them."""
    where = ["j.status <> 'deleted'"]
    args: list[Any] = []
    if in_queues is not None:
        args.append(in_queues)
        where.append(f"j.queue = ANY(${len(args)}::text[])")
    if status:
        args.append(status)
        where.append(f"j.status = ${len(args)}")
    if search:
        args.append(f"%{_like_escape(search)}%")
        where.append(
            f"(j.name ILIKE ${len(args)} OR j.queue ILIKE ${len(args)} OR j.kind ILIKE ${len(args)})"
        )
    cond = " AND ".join(where)
    total = await conn.fetchval(f"SELECT count(*) FROM jobs j WHERE {cond}", *args)
    args.append(limit)
    rows = await conn.fetch(
        f"SELECT {_JOB_COLUMNS} FROM (SELECT * FROM jobs j WHERE {cond}"
        f" ORDER BY j.created_seq DESC, j.name LIMIT ${len(args)}) j {_JOB_PODS} ORDER BY j.created_seq DESC, j.name",
        *args,
    )
    return {"total": total, "jobs": await _with_failures(conn, [dict(r) for r in rows])}


async def _with_failures(conn, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each job row with its failed pods; a failed job's reason says how it failed."""
    failed = await failures(conn, [r["name"] for r in rows])
    for r in rows:
        r["failures"] = failed.get(r["name"], [])
        if r["status"] == "failed" and r["failures"]:
            r["reason"] = failure_text(r["failures"])
    return rows


def _like_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


async def job(conn, name: str) -> dict[str, Any] | None:
    """One job with its pods and its why timeline, or None."""
    row = await conn.fetchrow(
        f"SELECT {_JOB_COLUMNS}, j.spec FROM jobs j {_JOB_PODS} WHERE j.name = $1", name
    )
    if row is None:
        return None
    [out] = await _with_failures(conn, [dict(row)])
    spec = _loads(out.pop("spec")) or {}
    out["subgroups"] = spec.get("subgroups", [])
    out["topology"] = spec.get("topology")
    out["pods"] = [
        {
            "idx": p["idx"],
            "status": p["status"],
            "node": p["node"],
            "gpus": list(p["gpus"]),
            "gpu_share": p["gpu_share"],
            "request": {"gpu": p["gpu"], "cpu": p["cpu"] / 1000.0, "memory": float(p["memory"])},
            "exit_code": p["exit_code"],
            "failure_reason": p["failure_reason"],
        }
        for p in await conn.fetch(
            "SELECT idx, status, node, gpus, gpu_share, gpu, cpu, memory, exit_code, failure_reason"
            " FROM pods WHERE job = $1 ORDER BY idx",
            name,
        )
    ]
    out["timeline"] = await timeline.load(conn, name)
    return out


# -- nodes -------------------------------------------------------------------


def gpu_map(devices: int, pods: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Which pod holds which device of one node, and how much of it.

    A pod with ``gpu_share`` > 0 holds that fraction of its one device;
    otherwise it holds each device in ``gpus`` whole. Holders are listed in
    (job, pod) order; ``used`` is capped at 1 so a bad row cannot overflow a cell.
    """
    cells: list[dict[str, Any]] = [{"index": i, "used": 0.0, "holders": []} for i in range(devices)]
    for pod in sorted(pods, key=lambda p: (p["job"], p["idx"])):
        share = float(pod.get("gpu_share") or 0.0)
        held = pod["gpus"][:1] if share > 0 else pod["gpus"]
        for device in held:
            if not 0 <= device < devices:
                continue  # a device the node no longer reports: nothing to draw it in
            cell = cells[device]
            cell["holders"].append(
                {
                    "job": pod["job"],
                    "pod": pod["idx"],
                    "queue": pod.get("queue"),
                    "status": pod["status"],
                    "share": share if share > 0 else 1.0,
                }
            )
            cell["used"] = min(1.0, cell["used"] + (share if share > 0 else 1.0))
    return cells


async def nodes(conn, *, limit: int = 500) -> dict[str, Any]:
    """Nodes by name (at most ``limit``) with capacity, what is placed on them and their GPU maps;
    ``total`` counts every node."""
    rows = await conn.fetch(
        "SELECT name, pool, spec, gpus, cpu, memory FROM nodes WHERE NOT removed ORDER BY name LIMIT $1",
        limit,
    )
    placed: dict[str, list[dict[str, Any]]] = {}
    for p in await conn.fetch(
        "SELECT p.job, p.idx, p.status, p.node, p.gpus, p.gpu_share, p.gpu, p.cpu, p.memory, j.queue"
        " FROM pods p LEFT JOIN jobs j ON j.name = p.job"
        " WHERE p.node = ANY($2::text[]) AND p.status = ANY($1::text[]) ORDER BY p.node, p.job, p.idx",
        _PLACED,
        [r["name"] for r in rows],
    ):
        placed.setdefault(p["node"], []).append({**dict(p), "gpus": list(p["gpus"])})
    out = []
    for row in rows:
        spec = _loads(row["spec"]) or {}
        pods = placed.get(row["name"], [])
        cells = gpu_map(row["gpus"], pods)
        used_cpu = sum(p["cpu"] for p in pods)
        used_mem = sum(p["memory"] for p in pods)
        out.append(
            {
                "name": row["name"],
                "pool": row["pool"],
                "gpu_model": spec.get("gpu_model"),
                "labels": spec.get("labels", {}),
                "unschedulable": spec.get("unschedulable", False),
                "gpu_memory": spec.get("resources", {}).get("gpu_memory", 0),
                "total": {
                    "gpu": float(row["gpus"]),
                    "cpu": row["cpu"] / 1000.0,
                    "memory": float(row["memory"]),
                },
                "used": {
                    "gpu": round(sum(c["used"] for c in cells), 6),
                    "cpu": used_cpu / 1000.0,
                    "memory": float(used_mem),
                },
                "pods": len(pods),
                "devices": cells,
            }
        )
    total = await conn.fetchval("SELECT count(*)::int FROM nodes WHERE NOT removed")
    return {"nodes": out, "total": total}


# -- activity and overview -----------------------------------------------------


async def activity(conn, *, limit: int = 50, after: int = 0) -> list[dict[str, Any]]:
    """Recent decisions, newest first: one row per (message, job, kind of decision), pods counted."""
    rows = await conn.fetch(
        """
        SELECT d.stream_seq AS seq, d.kind, d.job, j.queue, d.pool, d.cycle, d.action, d.for_job,
               nullif(d.reason, '') AS reason, count(*)::int AS pods,
               array_agg(DISTINCT d.node ORDER BY d.node) AS nodes, min(e.recorded_at) AS at
        FROM decisions d
        LEFT JOIN jobs j ON j.name = d.job
        LEFT JOIN events e ON e.stream_seq = d.stream_seq AND e.idx = d.idx
        WHERE d.stream_seq > $1
        GROUP BY d.stream_seq, d.kind, d.job, j.queue, d.pool, d.cycle, d.action, d.for_job, d.reason
        ORDER BY d.stream_seq DESC, d.kind, d.job
        LIMIT $2
        """,
        after,
        limit,
    )
    return [{**dict(r), "nodes": list(r["nodes"])} for r in rows]


async def overview(conn) -> dict[str, Any]:
    """Headline figures: jobs by status, capacity and use, the last cycle, how far the log goes."""
    counts = {
        r["status"]: r["n"]
        for r in await conn.fetch(
            "SELECT status, count(*)::int AS n FROM jobs WHERE status <> 'deleted' GROUP BY status"
        )
    }
    cap = await conn.fetchrow(
        "SELECT count(*)::int AS nodes, coalesce(sum(gpus), 0)::float8 AS gpu, coalesce(sum(cpu), 0)::float8 AS cpu"
        " FROM nodes WHERE NOT removed"
    )
    used = await conn.fetchrow(
        "SELECT coalesce(sum(CASE WHEN gpu_share > 0 THEN gpu_share ELSE cardinality(gpus) END), 0)::float8 AS gpu,"
        " coalesce(sum(cpu), 0)::float8 AS cpu FROM pods WHERE node IS NOT NULL AND status = ANY($1::text[])",
        _PLACED,
    )
    cycle = await conn.fetchrow(
        "SELECT c.pool, c.cycle, c.clock, c.binds, c.evictions, e.recorded_at AS at FROM cycles c"
        " LEFT JOIN events e ON e.stream_seq = c.stream_seq AND e.idx = c.idx"
        " ORDER BY c.stream_seq DESC, c.idx DESC LIMIT 1"
    )
    return {
        "jobs": {s: counts.get(s, 0) for s in JOB_STATUSES if s != "deleted"},
        "nodes": cap["nodes"],
        "queues": await conn.fetchval("SELECT count(*)::int FROM queues WHERE status = 'active'"),
        "gpu": {"total": cap["gpu"], "used": used["gpu"]},
        "cpu": {"total": cap["cpu"] / 1000.0, "used": used["cpu"] / 1000.0},
        "last_cycle": dict(cycle) if cycle else None,
        "last_seq": await conn.fetchval("SELECT coalesce(max(stream_seq), 0) FROM events"),
        "dead_letters": await conn.fetchval("SELECT count(*)::int FROM dead_letters"),
    }


# -- history -----------------------------------------------------------------


async def history(conn, *, hours: float, points: int = 90) -> dict[str, Any]:
    """Each queue's allocated GPUs and fair share, and the GPUs the cluster holds, over the last ``hours``.

    Time is cut into ``points`` steps; each step shows every queue as its newest ``QueueStatus`` by the
    step's end said (the queue-controller speaks only when a figure changes, so a quiet queue keeps its
    last word). The cluster's use is the sum over top-level queues, against the GPUs registered now.
    """
    now = await conn.fetchval("SELECT now()")
    span = hours * 3600.0
    step = span / points
    start = now - datetime.timedelta(seconds=span)
    names = {
        r["name"]: r["parent"]
        for r in await conn.fetch("SELECT name, parent FROM queues WHERE status = 'active' ORDER BY name")
    }
    # Where each queue stood as the window opened: its newest status before it (one index probe each).
    before = {}
    for name in names:
        row = await conn.fetchrow(
            "SELECT payload::text AS p FROM events WHERE type = 'QueueStatus' AND payload->>'name' = $1"
            " AND recorded_at < $2 ORDER BY recorded_at DESC LIMIT 1",
            name,
            start,
        )
        if row is not None:
            before[name] = _gpu_figures(json.loads(row["p"]))
    rows = await conn.fetch(
        """
        SELECT DISTINCT ON (step, name) step, name, p FROM (
            SELECT floor(extract(epoch FROM e.recorded_at - $1::timestamptz) / $2)::int AS step,
                   e.payload->>'name' AS name, e.payload::text AS p, e.stream_seq, e.idx
            FROM events e
            WHERE e.type = 'QueueStatus' AND e.payload->>'name' = ANY($3::text[]) AND e.recorded_at >= $1
        ) s
        ORDER BY step, name, stream_seq DESC, idx DESC
        """,
        start,
        step,
        list(names),
    )
    said: dict[int, dict[str, tuple[float, float]]] = {}
    for r in rows:
        said.setdefault(min(r["step"], points - 1), {})[r["name"]] = _gpu_figures(json.loads(r["p"]))
    queues = {name: {"allocated": [], "fair_share": []} for name in names}
    used: list[float] = []
    current = dict(before)
    for i in range(points):
        current.update(said.get(i, {}))
        for name, series in queues.items():
            allocated, fair = current.get(name, (0.0, 0.0))
            series["allocated"].append(allocated)
            series["fair_share"].append(fair)
        used.append(sum(current.get(name, (0.0, 0.0))[0] for name, parent in names.items() if parent is None))
    total = await conn.fetchval("SELECT coalesce(sum(gpus), 0)::float8 FROM nodes WHERE NOT removed")
    return {
        "hours": hours,
        "step": step,
        "stop": now,
        "gpu_total": total,
        "used": used,
        "queues": queues,
    }


def _gpu_figures(status: dict[str, Any]) -> tuple[float, float]:
    return float(status.get("allocated", {}).get("gpu", 0.0)), float(
        status.get("fair_share", {}).get("gpu", 0.0)
    )
