"""A simulation whose log carries what the live allocator publishes about queues.

The live allocator follows each cycle's record with a ``QueueStatus`` for every queue whose figures
changed (fair share, allocated, requested); ``muster.simulate`` keeps them to itself. A report reads
fair share over time from those events, so a simulation meant for a report publishes them the same way.
"""

from __future__ import annotations

from muster import events as ev
from muster.scenario import model as m
from muster.scheduler.config import AllocatorConfig
from muster.scheduler.fold import AllocatorFold
from muster.scheduler.views import CycleOutcome
from muster.simulate import Simulation


class _StatusKeepingFold(AllocatorFold):
    """The allocator's fold, keeping what its last cycle said of each queue."""

    statuses: list[ev.QueueStatus] = []

    def cycle(self, clock: float, *, epoch: int) -> CycleOutcome:
        out = super().cycle(clock, epoch=epoch)
        self.statuses = out.queue_status
        return out


class ReportedSimulation(Simulation):
    """A ``Simulation`` that publishes each cycle's changed ``QueueStatus`` onto its log, as live."""

    def __init__(self, scenario: m.Scenario, config: AllocatorConfig | None = None) -> None:
        super().__init__(scenario, config)
        self.fold = _StatusKeepingFold(self.fold.engine, self.fold.pool)
        self._published: dict[str, ev.QueueStatus] = {}

    def cycle(self, clock: float) -> bool:
        changed = super().cycle(clock)
        fresh = [s for s in self.fold.statuses if self._published.get(s.name) != s]
        self._published.update((s.name, s) for s in fresh)
        # What the allocator says of queues is no news for the run: it does not keep it going.
        self.publish(fresh)
        return changed
