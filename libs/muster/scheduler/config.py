"""The allocator's configuration: which actions run, how nodes are scored.

Validation happens on construction, so an invalid config never reaches a
cycle; every error names the field it is about.
"""

from __future__ import annotations

import hashlib

import msgspec

PLACEMENTS = ("binpack", "spread")
"""KAI's strategies, for cpu-only pods and gpu pods alike."""
GPU_POLICIES = ("fgd-pack", "fgd", "bestfit", "packing", "random")
"""Placement policies of ``muster.kernels.policies`` a gpu pod may also be placed by (see policy_placement)."""
GPU_PLACEMENTS = PLACEMENTS + GPU_POLICIES
KNOWN_ACTIONS = ("allocate", "consolidate", "reclaim", "preempt", "stale_gang_eviction")


class FairnessConfig(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Time-based fair share (carried now, used by a later action set)."""

    usage_window: float = 604800.0
    half_life: float = 86400.0
    k: float = 1.0

    def __post_init__(self) -> None:
        if self.usage_window <= 0:
            raise ValueError(f"fairness.usage_window: must be > 0, got {self.usage_window}")
        if self.half_life < 0:
            raise ValueError(f"fairness.half_life: must be >= 0, got {self.half_life}")
        if self.k < 0:
            raise ValueError(f"fairness.k: must be >= 0, got {self.k}")


class AllocatorConfig(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """What one allocator does each cycle, in the order ``actions`` lists."""

    placement_gpu: str = "binpack"
    placement_cpu: str = "binpack"
    actions: tuple[str, ...] = KNOWN_ACTIONS
    reclaimer_utilization_multiplier: float = 1.0
    stale_gang_grace: float = 60.0
    fairness: FairnessConfig | None = None
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
        if len(set(self.actions)) != len(self.actions):
            raise ValueError("actions: an action is listed twice")
        if not self.reclaimer_utilization_multiplier >= 1.0:
            raise ValueError(
                f"reclaimer_utilization_multiplier: must be >= 1.0, got {self.reclaimer_utilization_multiplier}"
            )

    def digest(self) -> str:
        """A stable hash of every setting, recorded in CycleCompleted. Settings added later count only
        when they differ from their default, so a configuration recorded before they existed keeps its
        digest."""
        data = msgspec.to_builtins(self)
        for name, default in _ADDED_LATER.items():
            if data.get(name) == default:
                del data[name]
        return hashlib.sha256(msgspec.json.encode(data)).hexdigest()[:16]


_ADDED_LATER = {"forget_finished": False}
