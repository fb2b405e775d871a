"""A job's "why": what happened to it, in log order, read from the ``events`` table.

``timeline(rows, job)`` is pure: it takes event rows (``stream_seq``, ``idx``,
``type``, ``payload``, ``recorded_at``) and returns one entry per thing a
person would want to read. Per-pod events of one message (a gang's binds in
one cycle, a batch of confirmations) become one entry, so an eight-pod gang
reads as one line, not eight. ``load(conn, job)`` fetches the rows that
matter to one job and applies it; the dashboard and ``muster why`` share it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

import msgspec

# Kinds of entry, in the words the dashboard and the CLI show.
CREATED = "created"
WAITING = "waiting"
BIND_REQUESTED = "bind_requested"
BIND_FAILED = "bind_failed"
BOUND = "bound"
EVICTION_REQUESTED = "eviction_requested"
MADE_ROOM = "made_room"
EVICTED = "evicted"
COMPLETED = "completed"
FAILED = "failed"
DELETED = "deleted"

_POD_EVENTS = {
    "BindRequested": BIND_REQUESTED,
    "BindFailed": BIND_FAILED,
    "PodBound": BOUND,
    "EvictionRequested": EVICTION_REQUESTED,
    "PodEvicted": EVICTED,
    "PodCompleted": COMPLETED,
    "PodFailed": FAILED,
}

# Where a cycle's record carries changed pending reasons: a large cycle's come in parts before its end.
_REASONS_FIELD = {"CycleCompleted": "pending", "PendingReasons": "reasons"}


class PodRef(msgspec.Struct, frozen=True, kw_only=True):
    """One pod an entry is about, and where it was (or was going) at that moment."""

    pod: int
    node: str = ""
    gpus: list[int] = []
    gpu_share: float = 0.0


class Entry(msgspec.Struct, frozen=True, kw_only=True):
    """One line of a job's history."""

    seq: int
    """Stream sequence of the (first) event this entry stands for."""
    idx: int
    kind: str
    text: str
    """The line as a person reads it."""
    at: datetime | None = None
    """When the projector recorded the event (wall clock of the database)."""
    clock: float | None = None
    """Scheduler clock, where the event carries one (cycles, starts, completions)."""
    cycle: int | None = None
    pods: list[PodRef] = []
    action: str | None = None
    for_job: str | None = None
    """For an eviction: the job it makes room for."""
    job: str | None = None
    """For ``made_room``: the other job whose pods were evicted."""
    reason: str | None = None
    """Why it waits (``waiting``), why a bind failed, an eviction's reason, how a pod failed."""
    exit_code: int | None = None
    """For ``failed``: the process's exit status (negative: killed by that signal; None: no process)."""


# Rows that concern one job: its own events, cycles that changed its pending
# reason (in their CycleCompleted or in one of its PendingReasons parts), and
# evictions of other jobs made on its behalf.
JOB_EVENTS_SQL = """
SELECT stream_seq, idx, type, payload, recorded_at FROM events
WHERE (type IN ('PodGroupCreated', 'PodGroupDeleted') AND payload->>'name' = $1)
   OR (type IN ('BindRequested', 'BindFailed', 'PodBound', 'EvictionRequested', 'PodEvicted', 'PodCompleted',
                'PodFailed')
       AND payload->>'job' = $1)
   OR (type = 'EvictionRequested' AND payload->>'for_job' = $1)
   OR (type = 'CycleCompleted' AND payload->'pending'->>$1 IS NOT NULL)
   OR (type = 'PendingReasons' AND payload->'reasons'->>$1 IS NOT NULL)
ORDER BY stream_seq, idx
"""


async def load(conn: Any, job: str) -> list[Entry]:
    """The timeline of ``job`` from the projection behind ``conn`` (an asyncpg connection or pool)."""
    return timeline(await conn.fetch(JOB_EVENTS_SQL, job), job)


def timeline(rows: Iterable[Mapping[str, Any]], job: str) -> list[Entry]:
    """Entries about ``job`` from event rows, oldest first.

    Rows about other jobs are ignored, so any superset of ``JOB_EVENTS_SQL``'s
    rows gives the same answer. ``payload`` may be a dict or its JSON text.
    """
    raw: list[dict[str, Any]] = []
    last_reason: str | None = None
    for row in sorted(rows, key=lambda r: (r["stream_seq"], r["idx"])):
        payload = row["payload"]
        if isinstance(payload, str | bytes):
            payload = json.loads(payload)
        base = {"seq": row["stream_seq"], "idx": row["idx"], "at": row.get("recorded_at")}
        kind = row["type"]
        if kind == "PodGroupCreated" and payload.get("name") == job:
            raw.append({**base, "kind": CREATED, "group": payload})
        elif kind == "PodGroupDeleted" and payload.get("name") == job:
            raw.append({**base, "kind": DELETED})
        elif kind in _REASONS_FIELD and job in payload.get(_REASONS_FIELD[kind], {}):
            reason = payload[_REASONS_FIELD[kind]][job]
            if not reason:
                last_reason = None  # no longer pending: the same reason later is news again
            elif reason != last_reason:
                last_reason = reason
                raw.append(
                    {**base, "kind": WAITING, "reason": reason, "cycle": payload.get("cycle"),
                     "clock": payload.get("clock")}
                )  # fmt: skip
        elif kind in _POD_EVENTS:
            if payload.get("job") == job:
                entry_kind = _POD_EVENTS[kind]
            elif kind == "EvictionRequested" and payload.get("for_job") == job:
                entry_kind = MADE_ROOM
            else:
                continue
            raw.append(
                {
                    **base,
                    "kind": entry_kind,
                    "pod": PodRef(
                        pod=payload.get("pod", 0),
                        node=payload.get("node", ""),
                        gpus=list(payload.get("gpus", [])),
                        gpu_share=payload.get("gpu_share", 0.0),
                    ),
                    "job": payload.get("job"),
                    "cycle": payload.get("cycle"),
                    "clock": payload.get("at") or None,
                    "action": payload.get("action") or None,
                    "for_job": payload.get("for_job") or None,
                    "reason": payload.get("reason") or None,
                    "exit_code": payload.get("exit_code"),
                    "pipelined": bool(payload.get("pipelined")),
                }
            )
    return [_render(group) for group in _merge(raw)]


_MERGE_KEY = ("kind", "seq", "job", "action", "for_job", "reason", "exit_code", "pipelined")


def _merge(raw: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """Runs of per-pod entries from one message that say the same thing become one group."""
    groups: list[list[dict[str, Any]]] = []
    for item in raw:
        if (
            "pod" in item
            and groups
            and "pod" in groups[-1][0]
            and all(groups[-1][0].get(k) == item.get(k) for k in _MERGE_KEY)
        ):
            groups[-1].append(item)
        else:
            groups.append([item])
    return groups


def _render(group: list[dict[str, Any]]) -> Entry:
    first = group[0]
    kind = first["kind"]
    common = {"seq": first["seq"], "idx": first["idx"], "kind": kind, "at": first["at"]}
    if kind == CREATED:
        g = first["group"]
        pods = sum(int(p.get("count", 1)) for p in g.get("pods", []))
        gang = g.get("min_available", 1)
        text = (
            f"submitted to queue {g.get('queue')} as a {g.get('kind', 'Job')}: {_plural(pods, 'pod')}, "
            f"runs once {gang} can start together; priority {g.get('priority')}"
            + ("" if g.get("preemptible", True) else ", not preemptible")
        )
        return Entry(**common, text=text)
    if kind == DELETED:
        return Entry(**common, text="deleted")
    if kind == WAITING:
        return Entry(
            **common,
            text=f"pending: {first['reason']}",
            reason=first["reason"],
            cycle=first["cycle"],
            clock=first["clock"],
        )
    pods = [item["pod"] for item in group]
    who = _pods(pods)
    where = _where(pods)
    action, for_job, reason = first["action"], first["for_job"], first["reason"]
    if kind == BIND_REQUESTED:
        text = f"placed {who} on {where}" + (
            f" in cycle {first['cycle']}" if first["cycle"] is not None else ""
        )
        if first["pipelined"]:
            text += ", to start once the evictions it waits for finish"
    elif kind == BOUND:
        text = f"{who} started on {where}"
    elif kind == BIND_FAILED:
        text = f"binding {who} on {where} failed" + (f": {reason}" if reason else "")
    elif kind == EVICTION_REQUESTED:
        text = f"{action or 'eviction'}: {who} to leave {where}"
        text += f" to make room for {for_job}" if for_job else ""
        text += f" ({reason})" if reason else ""
    elif kind == MADE_ROOM:
        text = f"{action or 'eviction'} of {first['job']}'s {who} on {where} to make room for this job"
        text += f" ({reason})" if reason else ""
    elif kind == EVICTED:
        text = f"{who} evicted from {where}, back to pending"
    elif kind == FAILED:
        text = failure_line(who, where, first["exit_code"], reason)
    else:  # COMPLETED
        text = f"{who} completed on {where}"
    return Entry(
        **common,
        text=text,
        clock=first["clock"],
        cycle=first["cycle"],
        pods=pods,
        action=action,
        for_job=for_job,
        job=first["job"] if kind == MADE_ROOM else None,
        reason=reason,
        exit_code=first["exit_code"] if kind == FAILED else None,
    )


def failure_line(who: str, where: str, exit_code: int | None, reason: str | None) -> str:
    """'pod 0 failed on gpu-a with exit code 3: out of memory'; the words ``muster why`` and status share."""
    text = f"{who} failed on {where or '?'}"
    if exit_code is not None:
        text += f" with exit code {exit_code}"
    return text + (f": {reason}" if reason else "")


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _pods(pods: list[PodRef]) -> str:
    """'pod 3', 'pods 0-3', 'pods 0-1, 4'."""
    ids = sorted({p.pod for p in pods})
    runs: list[str] = []
    start = prev = ids[0]
    for i in [*ids[1:], None]:
        if i is not None and i == prev + 1:
            prev = i
            continue
        runs.append(str(start) if start == prev else f"{start}-{prev}")
        if i is not None:
            start = prev = i
    return ("pod " if len(ids) == 1 else "pods ") + ", ".join(runs)


def _where(pods: list[PodRef]) -> str:
    """'node-a (gpu 0, 1)', 'node-a (0.5 of gpu 2), node-b'; nodes in first-seen order."""
    by_node: dict[str, list[str]] = {}
    for p in pods:
        devices = by_node.setdefault(p.node or "?", [])
        if p.gpu_share and p.gpus:
            devices.append(f"{p.gpu_share:g} of gpu {p.gpus[0]}")
        else:
            devices.extend(str(g) for g in p.gpus)
    parts = []
    for node, devices in by_node.items():
        if not devices:
            parts.append(node)
        elif all(d.isdigit() for d in devices):
            parts.append(f"{node} (gpu {', '.join(devices)})")
        else:
            parts.append(f"{node} ({', '.join(devices)})")
    return ", ".join(parts)
