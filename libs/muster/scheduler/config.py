"""The allocator's configuration: which actions run, how nodes are scored.

Validation happens on construction, so an invalid config never reaches a
cycle; every error names the field it is about.
"""

from __future__ import annotations

import hashlib
import math

import msgspec

from muster.usage_window import UsageWindow, window_error

PLACEMENTS = ("binpack", "spread")
"""KAI's strategies, for cpu-only pods and gpu pods alike."""
GPU_POLICIES = ("fgd-pack", "fgd", "bestfit", "packing", "random")
"""Placement policies of ``muster.kernels.policies`` a gpu pod may also be placed by (see policy_placement)."""
GPU_PLACEMENTS = PLACEMENTS + GPU_POLICIES
KNOWN_ACTIONS = ("allocate", "consolidate", "reclaim", "preempt", "stale_gang_eviction")
MIN_RUNTIME_RESOLUTIONS = ("lca", "queue")
"""KAI's ``reclaimResolveMethod`` of the minruntime plugin (kai-semantics §9)."""


DEFAULT_MIN_RUNTIMES = ("default_preempt_min_runtime", "default_reclaim_min_runtime")


def seconds_error(value: float) -> str | None:
    """Why ``value`` is no length of time in seconds (None when it is one): negative or not finite."""
    if math.isfinite(value) and value >= 0:
        return None
    return f"must be a finite number of seconds >= 0, got {value}"


class FairnessConfig(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Time-based fair share: which past counts (KAI's ``usageParams``: ``windowSize``, ``windowType``,
    ``tumblingWindowStartTime``, ``cronString``), how it decays, how strongly it weighs."""

    usage_window: float = 604800.0
    half_life: float = 86400.0
    k: float = 1.0
    window_type: str = "sliding"
    tumbling_window_start: float | None = None
    """Seconds on the cycle clock (Unix seconds live, scenario seconds in a simulation)."""
    cron_string: str | None = None
    """A five-field cron expression, read in UTC (``muster.cron``)."""

    def __post_init__(self) -> None:
        wrong = window_error(
            self.window_type, self.usage_window, self.tumbling_window_start, self.cron_string
        )
        if wrong is not None:
            raise ValueError(f"fairness.{wrong[0]}: {wrong[1]}")
        if self.half_life < 0:
            raise ValueError(f"fairness.half_life: must be >= 0, got {self.half_life}")
        if self.k < 0:
            raise ValueError(f"fairness.k: must be >= 0, got {self.k}")

    @property
    def window(self) -> UsageWindow:
        """The window the allocator keeps history for."""
        return UsageWindow(
            type=self.window_type,
            size=self.usage_window,
            tumbling_start=self.tumbling_window_start,
            cron=self.cron_string,
        )


class AllocatorConfig(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """What one allocator does each cycle, in the order ``actions`` lists."""

    placement_gpu: str = "binpack"
    placement_cpu: str = "binpack"
    actions: tuple[str, ...] = KNOWN_ACTIONS
    reclaimer_utilization_multiplier: float = 1.0
    stale_gang_grace: float = 60.0
    fairness: FairnessConfig | None = None
    reclaim_min_runtime_resolution: str = "lca"
    """Whose queue values protect a job from reclaim: ``lca`` from the child of the reclaimer's and the
    victim's lowest common ancestor up, ``queue`` from the victim's leaf up (``actions.victims``)."""
    default_preempt_min_runtime: float = 0.0
    default_reclaim_min_runtime: float = 0.0
    """Seconds of min-runtime where no queue on the resolution path sets one (KAI's minruntime plugin
    arguments ``defaultPreemptMinRuntime``, ``defaultReclaimMinRuntime``); a job's own value still wins."""
    forget_finished: bool = False
    """Drop a job from the allocator's state once every pod of it finished, keeping only its name (so it
    is never created again): the state then follows what runs and waits, not the whole history. The
    allocator service turns it on; simulations keep every job to report on."""

    def __post_init__(self) -> None:
        for field, known in (("placement_gpu", GPU_PLACEMENTS), ("placement_cpu", PLACEMENTS)):
            value = getattr(self, field)
            if value not in known:
                raise ValueError(f"{field}: must be one of {', '.join(known)}, got {value!r}")
        for i, name in enumerate(self.actions):
            if name not in KNOWN_ACTIONS:
                raise ValueError(f"actions[{i}]: unknown action {name!r}; known: {', '.join(KNOWN_ACTIONS)}")
        if self.reclaim_min_runtime_resolution not in MIN_RUNTIME_RESOLUTIONS:
            raise ValueError(
                f"reclaim_min_runtime_resolution: must be one of {', '.join(MIN_RUNTIME_RESOLUTIONS)}, "
                f"got {self.reclaim_min_runtime_resolution!r}"
            )
        for field in DEFAULT_MIN_RUNTIMES:
            wrong = seconds_error(getattr(self, field))
            if wrong is not None:
                raise ValueError(f"{field}: {wrong}")
        if len(set(self.actions)) != len(self.actions):
            raise ValueError("actions: an action is listed twice")
        if not self.reclaimer_utilization_multiplier >= 1.0:
            raise ValueError(
                f"reclaimer_utilization_multiplier: must be >= 1.0, got {self.reclaimer_utilization_multiplier}"
            )

    def default_min_runtime(self, kind: str) -> float:
        """Seconds a running job is protected from ``kind`` (preempt | reclaim) when no queue says."""
        return self.default_reclaim_min_runtime if kind == "reclaim" else self.default_preempt_min_runtime

    def digest(self) -> str:
        """A stable hash of every setting, recorded in CycleCompleted. Settings added later count only
        when they differ from their default, so a configuration recorded before they existed keeps its
        digest."""
        data = msgspec.to_builtins(self)
        for name, default in _ADDED_LATER.items():
            if data.get(name) == default:
                del data[name]
        for name, default in _FAIRNESS_ADDED_LATER.items():
            if data.get("fairness") and data["fairness"].get(name) == default:
                del data["fairness"][name]
        return hashlib.sha256(msgspec.json.encode(data)).hexdigest()[:16]


_ADDED_LATER = {
    "forget_finished": False,
    "reclaim_min_runtime_resolution": "lca",
    "default_preempt_min_runtime": 0.0,
    "default_reclaim_min_runtime": 0.0,
}
_FAIRNESS_ADDED_LATER = {"window_type": "sliding", "tumbling_window_start": None, "cron_string": None}
