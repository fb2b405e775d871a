"""The scenario file format (spec/scenario-format.md, v1) as msgspec Structs.

These types mirror the file one to one and reject unknown keys. Quantities
stay as written (``"16Gi"``, ``"500m"``, ``4``): ``load`` checks them with
the field path, ``convert`` turns them into base units for the events.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

Quantity = int | float | str
Placement = Literal["binpack", "spread"]
# For GPU pods also the placement policies of muster.kernels.policies (docs/scenario-format-extensions.md).
GpuPlacement = Literal["binpack", "spread", "fgd-pack", "fgd", "bestfit", "packing", "random"]
ActionName = Literal["allocate", "consolidate", "reclaim", "preempt", "stale_gang_eviction"]
PriorityClass = Literal["train", "build-preemptible", "build", "inference"]
# What a pod is and what a node runs (muster.runtimes; docs/scenario-format-extensions.md).
Runtime = Literal["command", "image", "simulated"]

ALL_ACTIONS: tuple[str, ...] = ("allocate", "consolidate", "reclaim", "preempt", "stale_gang_eviction")
PRIORITY_CLASSES: dict[str, int] = {"train": 50, "build-preemptible": 75, "build": 100, "inference": 125}
DEFAULT_PRIORITY = PRIORITY_CLASSES["train"]
"""A job naming neither priority nor class is a training job, as in KAI."""


class _Strict(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    pass


class PlacementConfig(_Strict):
    gpu: GpuPlacement = "binpack"
    cpu: Placement = "binpack"


class FairnessConfig(_Strict):
    usage_window: float = 604800.0
    half_life: float = 86400.0
    k: float = 1.0
    window_type: Literal["sliding", "tumbling", "cron"] = "sliding"
    """sliding | tumbling | cron (KAI's windowType; docs/scenario-format-extensions.md)."""
    tumbling_window_start: float | None = None
    cron_string: str | None = None


class Config(_Strict):
    placement: PlacementConfig = PlacementConfig()
    actions: list[ActionName] = msgspec.field(default_factory=lambda: list(ALL_ACTIONS))
    reclaimer_utilization_multiplier: float = 1.0
    max_cycles: int = 100
    time_step: float = 1.0
    stale_gang_grace: float = 60.0
    fairness: FairnessConfig | None = None
    reclaim_min_runtime_resolution: Literal["lca", "queue"] = "lca"
    """KAI's reclaimResolveMethod: which queue values protect a job from a reclaim (kai-semantics §9)."""
    default_preempt_min_runtime: float = 0.0
    default_reclaim_min_runtime: float = 0.0
    """KAI's defaultPreemptMinRuntime / defaultReclaimMinRuntime: seconds where no queue sets a value."""
    skip_idle: bool = False
    """Simulation only: jump over the cycles that would decide nothing (``muster.simulate``); the same
    decisions at the same clocks as stepping every ``time_step``."""


class Node(_Strict):
    name: str
    pool: str = "default"
    labels: dict[str, str] = {}
    resources: dict[str, Quantity] = {}
    gpu_model: str | None = None
    unschedulable: bool = False
    runtimes: list[Runtime] | None = None
    """What kinds of pod the node runs; absent: simulated ones."""
    taints: list[Any] = []
    """core/v1 Taints, checked by ``muster.pod_constraints`` (v1.1)."""


class QueueResource(_Strict):
    """``None`` means the default for that resource (see ``convert``)."""

    quota: Quantity | None = None
    over_quota_weight: float | None = None
    limit: Quantity | None = None


class MinRuntime(_Strict):
    preempt: float | None = None
    reclaim: float | None = None


class Queue(_Strict):
    name: str
    parent: str | None = None
    priority: int = 100
    resources: dict[str, QueueResource] = {}
    min_runtime: MinRuntime | None = None


class Topology(_Strict):
    required: str | None = None
    preferred: str | None = None
    name: str | None = None
    """v1.1: the topology (of the file's ``topologies``) whose levels ``required`` and ``preferred``
    name, by label or alias; absent: they are node labels on their own."""


class TopologyLevel(_Strict):
    """One level of a KAI Topology, as KAI spells it."""

    nodeLabel: str  # noqa: N815 - KAI's spelling
    alias: str = ""


class TopologyResource(_Strict):
    """v1.1: a KAI Topology: node labels from the widest level to the narrowest (kai-semantics.md §18)."""

    name: str
    levels: list[TopologyLevel] = []


class Pod(_Strict):
    count: int = 1
    resources: dict[str, Quantity] = {}
    node_selector: dict[str, str] = {}
    gpu_models: list[str] = []
    role: str = "worker"
    tolerations: list[Any] = []
    affinity: dict[str, Any] | None = None
    """core/v1 Tolerations and Affinity, checked by ``muster.pod_constraints`` (v1.1)."""
    labels: dict[str, str] = {}
    """The pods' labels, which pod affinity and anti-affinity select (v1.1)."""
    subgroup: str = ""
    """The leaf sub-group this entry's pods belong to ('': the job directly)."""


class SubGroup(_Strict):
    """One node of a job's sub-group tree (v1.1): a leaf needs ``min_available`` pods, a parent
    ``min_subgroup`` of its children (default: all)."""

    name: str
    parent: str | None = None
    min_available: int | None = None
    min_subgroup: int | None = None
    topology: Topology | None = None
    """v1.1: its own constraint, binding the pods of its subtree inside its parent's domain
    (kai-semantics.md §14.5)."""


class Running(_Strict):
    node: str
    gpus: list[int] = []


class Job(_Strict):
    name: str
    queue: str
    pool: str = "default"
    priority_class: PriorityClass | None = None
    priority: int | None = None
    preemptible: bool | None = None
    min_available: int | None = None
    submitted_at: float = 0.0
    duration: float | None = None
    min_runtime: float | None = None
    topology: Topology | None = None
    min_subgroup: int | None = None
    subgroups: list[SubGroup] = []
    pods: list[Pod] = []
    running: list[Running] = []
    started_at: float = 0.0
    runtime: Runtime = "simulated"
    """What the job's pods are, and so which nodes may run them."""
    preemption_delay: float | None = None
    """v1.1: seconds after submitted_at or its last eviction before it may make anyone be evicted."""
    stale_gang_grace: float | None = None
    """v1.1: this job's own stale-gang grace in seconds (negative: never evicted)."""


class Expect(_Strict):
    running: list[str] | None = None
    pending: list[str] | None = None
    preempted: list[str] | None = None
    completed: list[str] | None = None
    placements: dict[str, list[str]] = {}
    fair_share: dict[str, dict[str, Quantity]] = {}
    allocated: dict[str, dict[str, Quantity]] = {}
    reasons: dict[str, str] = {}
    """Words each named job's reason (why it waits) contains."""


class Scenario(_Strict):
    name: str
    description: str = ""
    config: Config = Config()
    nodes: list[Node] = []
    topologies: list[TopologyResource] = []
    queues: list[Queue] = []
    jobs: list[Job] = []
    expect: Expect | None = None
