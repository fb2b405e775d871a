"""What a cycle returns and what a snapshot shows: frozen Structs, safe to hand to other code."""

from __future__ import annotations

import msgspec

from muster.events import BindRequested, CycleCompleted, EvictionRequested, QueueStatus


class PodPlacement(msgspec.Struct, frozen=True, kw_only=True):
    node: str
    gpus: list[int] = []


class JobView(msgspec.Struct, frozen=True, kw_only=True):
    status: str
    """pending | running | preempted | completed"""
    pods: list[PodPlacement] = []
    """Pods bound (or binding) now, in pod order."""
    reason: str | None = None
    queue: str = ""


class QueueView(msgspec.Struct, frozen=True, kw_only=True):
    """A queue in user-facing units: gpu in devices, cpu in CORES, memory in bytes."""

    fair_share: dict[str, float] = {}
    allocated: dict[str, float] = {}
    requested: dict[str, float] = {}


class NodeView(msgspec.Struct, frozen=True, kw_only=True):
    """A node in user-facing units: gpu in devices (free = whole idle devices), cpu in cores, memory in bytes."""

    pool: str
    free: dict[str, float] = {}
    total: dict[str, float] = {}


class ClusterSnapshot(msgspec.Struct, frozen=True, kw_only=True):
    jobs: dict[str, JobView] = {}
    queues: dict[str, QueueView] = {}
    nodes: dict[str, NodeView] = {}


class CycleOutcome(msgspec.Struct, frozen=True, kw_only=True):
    decisions: list[BindRequested | EvictionRequested]
    """In decision order, each stamped with cycle, epoch and pool."""
    completed: CycleCompleted
    queue_status: list[QueueStatus]
    """Per queue, base units: gpu devices, cpu millicores, memory bytes."""
    reasons: dict[str, str]
    """Every pending job's current reason."""
