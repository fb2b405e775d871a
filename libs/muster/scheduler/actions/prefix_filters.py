"""KAI's cheap filters on an accumulated victim prefix (§20, ``accumulated_scenario_filters``).

Before the scenario search simulates anything for a prefix of the victim
order, it asks three questions that need no placement: does some node the
pending pods may use become reachable (one with GPUs idle or releasing, or
one a victim frees; any node when a pod asks for no GPU), checked only for
pods with a node selector or required node affinity, as KAI builds that
filter only for them; does every required topology level of the job and of
its sub-group sets find domains with enough GPUs (``topology.domains_could_hold``);
and do idle, releasing and freed GPUs add up to the request at all. A prefix
failing one is skipped with every proposal drawn from it: each would fail its
simulation, so the filters save simulations and change no outcome.

The filters of one probe see its prefixes grow, so the victims' pods are
counted once, as they first appear.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import numpy as np

from muster.tolerances import EPS

from .. import topology
from ..session import Session
from ..state import Job
from .victims import Unit


class PrefixFilters:
    """The filters of one probe: the job's pods ``want``, GPUs free before any eviction (``free``, in all;
    ``free_by_node`` per node slot, asked for only when a node-level filter applies), the prefix starting
    from the probe's ``recorded`` victims."""

    def __init__(
        self,
        s: Session,
        job: Job,
        want: list[int],
        free: float,
        free_by_node: Callable[[], np.ndarray],
        recorded: Iterable[Unit] = (),
    ) -> None:
        self._s, self._job, self._want = s, job, want
        self._need = s.request_of(job, want)[0]
        self._free = free
        self._seen: set[tuple[str, int]] = set()
        pods = [job.pods[i] for i in want]
        keys = {p.spec_key for p in pods if p.node_selector or p.node_affinity}
        self._selective = [s.eligible(job, key) for key in keys]
        self._topology = topology.domains_required(job, want)
        self._room: np.ndarray | None = None
        self._reach: np.ndarray | None = None
        if self._selective or self._topology:
            self._room = free_by_node().copy()
            if all(s.request_of(job, [i])[0] > EPS for i in want):
                self._reach = self._room > EPS
            else:
                self._reach = s.in_scope.copy()
        self.grow(recorded)

    def grow(self, victims: Iterable[Unit]) -> None:
        """Add units to the prefix (a pod already counted is not counted again)."""
        for u in victims:
            for i in u.pods:
                if (u.job.name, i) in self._seen:
                    continue
                self._seen.add((u.job.name, i))
                gpus = u.job.acct[i][0]
                self._free += gpus
                if self._room is not None and self._reach is not None:
                    slot = u.job.node[i]
                    self._room[slot] += gpus
                    self._reach[slot] = True

    def passes(self) -> bool:
        """Whether proposals may be drawn from the prefix as it has grown so far."""
        if self._need > self._free + EPS:
            return False
        if self._reach is not None and any(not (mask & self._reach).any() for mask in self._selective):
            return False
        return not (self._topology and self._room is not None) or topology.domains_could_hold(
            self._s, self._job, self._want, self._room
        )
