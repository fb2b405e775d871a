"""The actions a cycle runs, by the names ``AllocatorConfig.actions`` uses.

An action is anything with a ``name`` and ``run(session)``; it reads the
session and appends decisions through statements. Names listed in the
config but not registered here are skipped, so the config can name actions
that a later version implements.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from ..config import AllocatorConfig
from ..session import Session
from .allocate import AllocateAction
from .consolidate import ConsolidateAction
from .preempt import PreemptAction
from .reclaim import ReclaimAction
from .stale import StaleGangEvictionAction


class Action(Protocol):
    name: str
    clock_dependent: bool
    """True if the action's decisions depend on the clock (min_runtime, grace periods)."""

    def run(self, session: Session) -> None: ...


REGISTRY: dict[str, Callable[[], Action]] = {
    "allocate": AllocateAction,
    "consolidate": ConsolidateAction,
    "reclaim": ReclaimAction,
    "preempt": PreemptAction,
    "stale_gang_eviction": StaleGangEvictionAction,
}


def actions_for(config: AllocatorConfig) -> list[Action]:
    """The registered actions of ``config.actions``, in its order."""
    out: list[Action] = []
    for name in config.actions:
        if name == "consolidate" and "spread" in (config.placement_gpu, config.placement_cpu):
            continue  # KAI's operator disables consolidation under spread
        factory = REGISTRY.get(name)
        if factory is not None:
            out.append(factory())
    return out
