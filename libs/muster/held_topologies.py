"""The KAI Topologies the live system holds (kai-semantics.md §18): a fold of ``TopologyDeclared``.

In KAI a Topology is a cluster object, created once and named by every later workload. Here the
podgrouper declares each Topology a submission carries (``declarations``), unless it holds it unchanged
already, and folds its own declarations (``HeldTopologies.apply``), read back from the log at start, so
a restart resolves a constraint exactly as before. A declaration replaces the one of its name; KAI's
update rule (labels immutable, aliases editable) is ``topologies.check_update``, checked before.

Unlike KAI, which turns aliases into labels at every cycle, a job's constraint is resolved once, when
its workload is grouped: an alias edited later changes what later workloads mean by it, not a job
already grouped (the allocator and ``muster replay`` see only the labels its group carries).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from muster.events import Event, TopologyDeclared, TopologyLevel
from muster.topologies import Level, TopologyDef, check_topology

if TYPE_CHECKING:
    from muster.bus import NatsBus


def declaration(topo: TopologyDef, workload_uid: str = "") -> TopologyDeclared:
    """The event that makes the system hold ``topo``."""
    levels = [TopologyLevel(label=level.label, alias=level.alias) for level in topo.levels]
    return TopologyDeclared(name=topo.name, levels=levels, workload_uid=workload_uid)


def declared(event: TopologyDeclared) -> TopologyDef:
    """The topology ``event`` declares, checked as KAI's CRD and webhook check one (``TopologyError``)."""
    return check_topology(event.name, [Level(level.label, level.alias) for level in event.levels], "")


def declarations(
    held: Mapping[str, TopologyDef], submitted: Mapping[str, TopologyDef], workload_uid: str = ""
) -> list[TopologyDeclared]:
    """What a submission carrying ``submitted`` declares: each topology new to ``held`` or edited (its
    aliases), in the submission's order. The caller has checked each against ``check_update``."""
    return [declaration(topo, workload_uid) for name, topo in submitted.items() if held.get(name) != topo]


class HeldTopologies:
    """The podgrouper's fold: the topologies declared so far, as of ``watermark``."""

    def __init__(self) -> None:
        self.by_name: dict[str, TopologyDef] = {}
        """What later submissions may name; read it, ``apply`` alone changes it."""
        self.watermark = 0
        """The stream sequence read through (the topologies subject up to it is folded)."""

    def apply(self, event: Event) -> None:
        """Fold one event; anything but a declaration leaves the topologies as they are."""
        if isinstance(event, TopologyDeclared):
            topo = declared(event)
            self.by_name[topo.name] = topo


async def read_held(
    bus: NatsBus, held: HeldTopologies | None = None, *, start_seq: int | None = None
) -> HeldTopologies:
    """``held`` (a new fold by default) with the declarations on ``bus``'s topologies subject from
    ``start_seq`` (default: after its watermark) folded in, through the log's end as it is now: the
    podgrouper's start (after its snapshot), the CLI's door."""
    held = held if held is not None else HeldTopologies()
    end = await bus.last_seq()
    start = held.watermark + 1 if start_seq is None else start_seq
    async for delivery in bus.read([bus.subjects.topologies], start_seq=start, end_seq=end):
        for event in delivery.events:
            held.apply(event)
    held.watermark = max(held.watermark, end)
    return held
