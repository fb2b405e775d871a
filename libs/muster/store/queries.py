"""Read-side queries over the projection, in the shapes the CLI prints."""

from __future__ import annotations

import json

import asyncpg

_LIVE_POD = ("bound", "releasing")


def _user_units(values: dict[str, float]) -> dict[str, float]:
    """Queue figures travel in base units (cpu millicores); users read cpu in cores."""
    return {k: (v / 1000.0 if k == "cpu" else float(v)) for k, v in sorted(values.items())}


async def status(conn: asyncpg.Connection) -> dict:
    """The live system in ``muster simulate --json``'s shape, plus nodes."""
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
    for job in jobs.values():
        if job["status"] == "running":
            job["reason"] = None
    queues = {
        row["name"]: {
            "parent": row["parent"],
            "fair_share": _user_units(json.loads(row["fair_share"])),
            "allocated": _user_units(json.loads(row["allocated"])),
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
