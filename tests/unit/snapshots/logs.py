"""Recorded logs for the folds' snapshot tests: the golden demo history, as is or run by machine agents."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import msgspec
from muster import events as ev
from muster.agent.plan import AGENT_LABEL, AGENT_VALUE
from muster.replay import LoggedMessage, load_log
from muster.subjects import subject_matches

GOLDEN = Path(__file__).parents[2] / "golden" / "demo-4-nodes-30-jobs.jsonl"
ROOT = Path(__file__).parents[3]


def golden(subjects: list[str]) -> list[LoggedMessage]:
    """The demo history's messages on ``subjects``."""
    return [m for m in load_log(GOLDEN) if any(subject_matches(p, m.subject) for p in subjects)]


def _agent_spec(spec: ev.NodeSpec) -> ev.NodeSpec:
    return msgspec.structs.replace(spec, labels={**spec.labels, AGENT_LABEL: AGENT_VALUE})


def _as_agent_event(event: ev.Event) -> ev.Event:
    if isinstance(event, ev.NodeRegistered | ev.NodeUpdated):
        return msgspec.structs.replace(event, node=_agent_spec(event.node))
    return event


def agent_run(subjects: list[str]) -> list[LoggedMessage]:
    """The demo history as if machine agents ran its nodes, ending with one node lost and a bind to it
    refused: what the node monitor and the agents fold."""
    messages = [
        LoggedMessage(m.seq, m.subject, [_as_agent_event(e) for e in m.events]) for m in golden(["muster.>"])
    ]
    seq = messages[-1].seq
    gang = next(
        e
        for m in messages
        for e in m.events
        if isinstance(e, ev.PodGroupCreated) and sum(p.count for p in e.pods) >= 2
    )
    late = msgspec.structs.replace(gang, name="late", workload_uid="Job/late/1")
    epoch = max(e.epoch for m in messages for e in m.events if isinstance(e, ev.LeaderElected))
    tail = [
        LoggedMessage(seq + 1, "muster.podgroups", [late]),
        LoggedMessage(seq + 2, "muster.nodes.default", [ev.NodeLost(name="gpu-01", last_seen=1.0, at=40.0)]),
        LoggedMessage(seq + 3, "muster.nodes.default", [ev.NodeRemoved(name="gpu-01")]),
        LoggedMessage(
            seq + 4,
            "muster.decisions.default",
            [ev.BindRequested(job="late", pod=0, node="gpu-01", gpus=[0], epoch=epoch)],
        ),
        LoggedMessage(
            seq + 5,
            "muster.decisions.default",
            [ev.BindRequested(job="late", pod=1, node="gpu-00", gpus=[1], epoch=epoch)],
        ),
    ]
    return [m for m in [*messages, *tail] if any(subject_matches(p, m.subject) for p in subjects)]


def digests_under_two_hash_seeds(script: str) -> set[str]:
    """What ``script`` prints, run under two string-hashing seeds."""
    return {
        subprocess.run(
            [sys.executable, "-c", script],
            env={**os.environ, "PYTHONHASHSEED": seed},
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for seed in ("1", "2")
    }
