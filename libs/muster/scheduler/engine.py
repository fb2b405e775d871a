"""The allocator as a pure engine: ``apply`` events, run a ``cycle``, read a ``snapshot``.

State is a function of the events applied so far, including the
allocator's own decisions read back from the log; a cycle reads the state
and returns decisions without changing it. Replaying the same log with the
same config therefore gives the same decisions.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator

from muster import events as ev
from muster.kernels import placement as pl
from muster.tolerances import EPS

from .actions import actions_for
from .actions.stale import stale_grace
from .actions.victims import min_runtime, min_runtime_in_force
from .config import AllocatorConfig
from .preemption_delay import RE_ARMING_ACTIONS, delay_end
from .queue_accounting import RESOURCES, QueueTable
from .session import Session
from .state import ALLOCATED, ClusterState, is_stale
from .views import ClusterSnapshot, CycleOutcome, JobView, NodeView, PodPlacement, QueueView

__all__ = ["Allocator", "ClusterSnapshot", "CycleOutcome", "JobView", "NodeView", "PodPlacement", "QueueView"]


class Allocator:
    """KAI's scheduling cycle over the pools it serves (``pools=None``: every pool)."""

    def __init__(self, config: AllocatorConfig, pools: frozenset[str] | None = None) -> None:
        self.config = config
        self.pools = pools
        self.state = ClusterState(
            pools,
            config.fairness.window if config.fairness else None,
            forget_finished=config.forget_finished,
        )
        self.pool_label = "default" if not pools else ",".join(sorted(pools))
        self._digest = config.digest()
        self._actions = actions_for(config)
        self._clock_free = not any(a.clock_dependent for a in self._actions)
        self._table: QueueTable | None = None
        self._table_version = -1
        self._idle: tuple[int, list[ev.QueueStatus], dict[str, str]] | None = None
        self._last_reasons: dict[str, str] = {}

    @property
    def last_reasons(self) -> dict[str, str]:
        """Why each waiting job waited at the last cycle this engine ran."""
        return self._last_reasons

    def restore(self, state: ClusterState, last_reasons: dict[str, str]) -> None:
        """Take over a state folded elsewhere (a snapshot); caches are rebuilt on the next cycle."""
        self.state = state
        self._last_reasons = dict(last_reasons)
        self._table = None
        self._table_version = -1
        self._idle = None

    def apply(self, event: ev.Event) -> str | None:
        """Evolve the state from one event; unknown or foreign events change nothing; idempotent. A node's
        fact that contradicts the state is refused, unapplied: the reason (else None)."""
        return self.state.apply(event)

    def _queue_table(self) -> QueueTable:
        if self._table is None or self._table_version != self.state.queue_version:
            self._table = QueueTable.build(self.state.queues)
            self._table_version = self.state.queue_version
        return self._table

    def _session(self, clock: float, cycle: int = 0, epoch: int = 0) -> Session:
        return Session(self.state, self.config, self._queue_table(), clock, cycle, epoch, self.pool_label)

    def cycle(self, clock: float, *, cycle: int, epoch: int = 0, watermark: int = 0) -> CycleOutcome:
        """One scheduling cycle at ``clock`` over the state as applied so far."""
        # A cycle allocates objects per decision and frees few of them: with a large state alive, the
        # collector's passes over it during the cycle cost more than the cycle itself. Paused, it runs
        # once afterwards over what is left; nothing is lost.
        paused = gc.isenabled()
        gc.disable()
        try:
            return self._cycle(clock, cycle, epoch, watermark)
        finally:
            if paused:
                gc.enable()

    def _cycle(self, clock: float, cycle: int, epoch: int, watermark: int) -> CycleOutcome:
        state = self.state
        if self._idle is not None and self._idle[0] == state.version:
            # nothing changed since a cycle that decided nothing: it would decide nothing again
            _, statuses, reasons = self._idle
            decisions: list[ev.BindRequested | ev.EvictionRequested] = []
        else:
            session = self._session(clock, cycle, epoch)
            for action in self._actions:
                action.run(session)
            decisions = session.decisions
            placed = session.placed
            jobs = state.ledger.jobs
            reasons = {
                name: why
                for name, why in sorted(session.reasons.items())
                if name in jobs and jobs[name].status in ("pending", "preempted") and name not in placed
            }
            statuses = self._queue_status(session)
            # an idle cycle's result holds until the state changes, unless time alone could change it
            reusable = not decisions and self.config.fairness is None
            reusable = reusable and (self._clock_free or not self.waiting_for_time(clock))
            self._idle = (state.version, statuses, reasons) if reusable else None
        self._last_reasons = reasons
        changed = {name: why for name, why in reasons.items() if state.prev_reasons.get(name) != why}
        for name in state.prev_reasons:
            if name not in reasons:
                changed[name] = ""
        completed = ev.CycleCompleted(
            pool=self.pool_label,
            cycle=cycle,
            epoch=epoch,
            watermark=watermark,
            clock=clock,
            binds=sum(1 for d in decisions if isinstance(d, ev.BindRequested)),
            evictions=sum(1 for d in decisions if isinstance(d, ev.EvictionRequested)),
            pending=dict(sorted(changed.items())),
            config_digest=self._digest,
        )
        return CycleOutcome(
            decisions=list(decisions), completed=completed, queue_status=list(statuses), reasons=dict(reasons)
        )

    @staticmethod
    def _queue_status(s: Session) -> list[ev.QueueStatus]:
        out = []
        for i, name in enumerate(s.table.names):
            out.append(
                ev.QueueStatus(
                    name=name,
                    fair_share={r: float(s.fair[i, k]) for k, r in enumerate(RESOURCES)},
                    allocated={r: float(s.alloc[i][k]) for k, r in enumerate(RESOURCES)},
                    requested={r: float(s.request[i, k]) for k, r in enumerate(RESOURCES)},
                )
            )
        return out

    def snapshot(self) -> ClusterSnapshot:
        """Jobs, queues and nodes now. Queue and node figures are in user units: gpu devices, cpu CORES,
        memory bytes."""
        state = self.state
        jobs = {}
        for name in sorted(state.ledger.jobs):
            job = state.ledger.jobs[name]
            status = job.status
            pods = [
                PodPlacement(node=state.node_table.slot_names[job.node[i]] or "", gpus=list(job.gpus[i]))
                for i in range(len(job.pods))
                if job.state[i] in ALLOCATED and job.node[i] >= 0
            ]
            reason = None
            if status in ("pending", "preempted"):
                reason = self._last_reasons.get(name, state.prev_reasons.get(name))
            jobs[name] = JobView(status=status, pods=pods, reason=reason, queue=job.queue)
        s = self._session(state.clock if state.clock is not None else 0.0)
        queues = {}
        for i, name in enumerate(s.table.names):
            queues[name] = QueueView(
                fair_share=_user_units(s.fair[i]),
                allocated=_user_units(s.alloc[i]),
                requested=_user_units(s.request[i]),
            )
        nodes = {}
        table = state.node_table
        a = table.arrays
        for name in sorted(table.nodes):
            node = table.nodes[name]
            slot = node.slot
            ints = a.ints[slot]
            gpus = int(ints[pl.N_GPUS])
            idle = sum(
                1 for d in range(gpus) if a.dev[pl.D_USED, slot, d] <= EPS and a.dev[pl.D_REL, slot, d] <= EPS
            )
            nodes[name] = NodeView(
                pool=node.spec.pool,
                free={
                    "gpu": float(idle),
                    "cpu": (ints[pl.N_CPU_CAP] - ints[pl.N_CPU_USED] - ints[pl.N_CPU_REL]) / 1000.0,
                    "memory": float(ints[pl.N_MEM_CAP] - ints[pl.N_MEM_USED] - ints[pl.N_MEM_REL]),
                },
                total={
                    "gpu": float(gpus),
                    "cpu": ints[pl.N_CPU_CAP] / 1000.0,
                    "memory": float(ints[pl.N_MEM_CAP]),
                },
            )
        return ClusterSnapshot(jobs=jobs, queues=queues, nodes=nodes)

    def waiting_for_time(self, clock: float) -> bool:
        """Whether a later clock alone could change a decision: a stale gang's grace is running, a pending
        job's preemption delay is, or a pending job exists while some running job is still inside a
        min-runtime."""
        return any(True for _ in self._deadlines(clock))

    def next_deadline(self, clock: float) -> float | None:
        """The earliest clock at which one of the rules ``waiting_for_time`` watches may decide otherwise
        (None: none waits; at or before ``clock``: the next cycle may already). Time-based fair share is
        not among them: see ``fair_share_moves_with_time``."""
        return min(self._deadlines(clock), default=None)

    def fair_share_moves_with_time(self) -> bool:
        """Whether time alone may change a decision through past usage: time-based fair share is on and a
        job waits, so any cycle may reorder the queues it competes in."""
        return self.config.fairness is not None and bool(self.state.ledger.pending_jobs)

    def _deadlines(self, clock: float) -> Iterator[float]:
        """When each timed rule that still holds something back ends, computed as the rules compute it
        (lazily: ``waiting_for_time`` stops at the first)."""
        state = self.state
        ledger = state.ledger
        names = {a.name for a in self._actions}
        if "stale_gang_eviction" in names:
            for job in map(ledger.jobs.__getitem__, sorted(ledger.stale_candidates)):
                grace = stale_grace(job, self.config)
                if is_stale(job) and grace >= 0:
                    # the action times a gang from the cycle that first saw it stale, this one if none yet
                    yield ledger.stale_since.get(job.name, clock) + grace
        if ledger.preemption_delay_used and names & RE_ARMING_ACTIONS:
            for name in ledger.sorted_pending():
                end = delay_end(ledger.jobs[name], clock)
                if end is not None and clock < end:
                    yield end
        config = self.config
        if min_runtime_in_force(state, config) and ledger.pending_jobs and names & {"reclaim", "preempt"}:
            table = self._queue_table()
            # resolved at the lowest common ancestor, reclaim's protection depends on who reclaims: each
            # queue with a pending job meets its own (by queue, the victim's leaf decides for all)
            reclaimers: list[int | None] = [None]
            if config.reclaim_min_runtime_resolution == "lca":
                reclaimers = sorted({table.index[q] for q in self._pending_queues() if q in table.index})
            for name in sorted(ledger.running_jobs):
                job = ledger.jobs[name]
                if not job.n_running or not job.preemptible or job.last_start is None:
                    continue
                ends = [job.last_start + min_runtime(state, table, job, "preempt", config)]
                ends += [
                    job.last_start + min_runtime(state, table, job, "reclaim", config, r) for r in reclaimers
                ]
                for end in ends:
                    if clock < end:
                        yield end

    def _pending_queues(self) -> set[str]:
        jobs = self.state.ledger.jobs
        return {jobs[name].queue for name in self.state.ledger.pending_jobs}


def _user_units(row) -> dict[str, float]:
    return {"gpu": float(row[0]), "cpu": float(row[1]) / 1000.0, "memory": float(row[2])}
