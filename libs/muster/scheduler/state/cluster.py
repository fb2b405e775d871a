"""The allocator's cluster state, evolved event by event (``ClusterState.apply``).

The state is composed of sections, each a class of its own that images and restores itself for
snapshots: the nodes (``NodeTable``: specs, and arrays a cycle copies instead of rebuilding a snapshot),
the pod ledger (``PodLedger``: jobs, their pods and where each runs), the queues' running sums
(``QueueSums``), the queues' past use (``UsageHistory``) and the pods to adopt (``Adoptions``). This
class keeps what the log says beside them (queue specs, the last clock read, the reasons last
recorded) and applies each event to every section it concerns.

Every transition is guarded by the current state, so a redelivered event changes nothing.

A pod that is moved (a victim re-placed elsewhere) gets an EvictionRequested and then a pipelined
BindRequested while it is RELEASING: the target is held at once (so no later cycle gives it away) and
the pod becomes PIPELINED there when its PodEvicted arrives.
"""

from __future__ import annotations

from typing import ClassVar, NamedTuple

import msgspec

from muster import events as ev
from muster.kernels import placement as pl
from muster.kernels.share import device_share
from muster.usage_window import UsageWindow

from ..preemption_delay import RE_ARMING_ACTIONS
from .admission import fact_refusal
from .adoptions import Adoptions, AdoptionsImage
from .ledger import LedgerImage, PodLedger
from .nodes import NodesImage, NodeTable
from .pods import (
    BINDING,
    BOUND,
    COMPLETED,
    COUNT_CLASS,
    HOLDING,
    PENDING,
    PIPELINED,
    RELEASING,
    Job,
    gpu_accounting,
)
from .queue_sums import QueueSums, QueueSumsImage
from .usage import UsageHistory, UsageImage

# The rule in plain Python: one call per pod, where entering a compiled function costs more than it.
_share_of = device_share.py_func


class ClusterImage(msgspec.Struct, kw_only=True):
    """What the state keeps beside its sections."""

    pools: list[str] | None
    forget_finished: bool
    version: int
    queues: dict[str, ev.QueueSpec]
    prev_reasons: dict[str, str]
    queue_version: int
    clock: float | None
    min_runtime_used: bool


class StateImage(NamedTuple):
    """A state's image, section by section."""

    cluster: ClusterImage
    node_table: NodesImage
    ledger: LedgerImage
    queue_sums: QueueSumsImage
    usage: UsageImage
    adoptions: AdoptionsImage


SECTIONS = {
    "node_table": NodeTable,
    "ledger": PodLedger,
    "queue_sums": QueueSums,
    "usage": UsageHistory,
    "adoptions": Adoptions,
}
"""The state's sections: its attribute for each, and its class."""


class ClusterState:
    """Everything the allocator knows, as a pure function of the events applied so far."""

    CACHES: ClassVar[frozenset[str]] = frozenset()
    IMAGED_AS: ClassVar[dict[str, tuple[str, ...]]] = {}

    def __init__(
        self,
        pools: frozenset[str] | None = None,
        usage_window: UsageWindow | None = None,
        *,
        forget_finished: bool = False,
    ) -> None:
        self.pools = pools
        self.forget_finished = forget_finished
        self.version = 0
        """Bumped by every change a cycle could decide differently on."""
        self.queues: dict[str, ev.QueueSpec] = {}
        self.queue_version = 0
        self.prev_reasons: dict[str, str] = {}
        """Why each job waited, as the cycles on the log recorded it."""
        self.clock: float | None = None
        """Clock of the last CycleCompleted read."""
        self.min_runtime_used = False
        """Whether any job or queue sets a min_runtime (else protection never applies)."""
        self.node_table = NodeTable()
        self.ledger = PodLedger()
        self.queue_sums = QueueSums()
        self.usage = UsageHistory(usage_window)
        self.adoptions = Adoptions()

    @property
    def jobs(self) -> dict[str, Job]:
        """Every job known, by name (the ledger's; read by most actions)."""
        return self.ledger.jobs

    def serves(self, pool: str) -> bool:
        return self.pools is None or pool in self.pools

    def queue_usage(self, clock: float, since: float, half_life: float) -> dict[str, list[float]]:
        """Per leaf queue, decayed resource-seconds of bound pods within (since, clock], those that stopped
        and those still running (see ``UsageHistory.decayed``)."""
        return self.usage.decayed(self.ledger.jobs, clock, since, half_life)

    # -- events ---------------------------------------------------------------------------------

    def apply(self, event: ev.Event) -> str | None:
        """Evolve from one event; events about other pools, unknown jobs or impossible transitions change
        nothing. A node's fact that contradicts the state changes nothing either and is refused: the reason
        is returned (``admission.fact_refusal``), None otherwise."""
        match event:
            # The events every pod brings come first: a match tries its cases in order.
            case ev.BindRequested():
                self._bind_requested(event)
            case ev.PodBound():
                refused = fact_refusal(self.ledger.jobs, self.node_table, event)
                if refused is not None:
                    return refused
                self._pod_bound(event)
            case ev.PodGroupCreated():
                if self.serves(event.pool) and self.ledger.is_new(event.name):
                    self._create_job(event)
            case ev.NodeRegistered(node=spec) | ev.NodeUpdated(node=spec):
                self._node_changed(spec)
            case ev.NodeRemoved(name=name):
                if name in self.node_table.nodes:
                    self._remove_node(name)
                    self.version += 1
            case ev.QueueUpserted(queue=spec):
                if self.queues.get(spec.name) != spec:
                    self.queues[spec.name] = spec
                    if spec.min_runtime is not None:
                        self.min_runtime_used = True
                    self._queues_changed()
            case ev.QueueDeleted(name=name):
                if self.queues.pop(name, None) is not None:
                    self._queues_changed()
            case ev.PodGroupDeleted(name=name):
                self._delete_job(name)
            case ev.BindFailed() | ev.BindRejected():
                if type(event) is ev.BindFailed and (
                    refused := fact_refusal(self.ledger.jobs, self.node_table, event)
                ):
                    return refused
                self._bind_failed(event)
            case ev.EvictionRequested():
                self._eviction_requested(event)
            case ev.PodEvicted() | ev.PodCompleted() | ev.PodFailed():
                refused = fact_refusal(self.ledger.jobs, self.node_table, event)
                if refused is not None:
                    return refused
                if type(event) is ev.PodEvicted:
                    self._pod_evicted(event)
                else:
                    self._pod_finished(event)
            case ev.AdoptPods():
                if self.serves(event.pool):
                    self.adoptions.adopt(event, self.ledger.jobs)
            case ev.CycleCompleted():
                self._advance_clock(event.clock)
                self._note_reasons(event.pending)
            case ev.PendingReasons():
                # Part of a cycle's record, just before its CycleCompleted: the clock advances with that.
                self._note_reasons(event.reasons)
            case _:
                return

    def _pod(self, name: str, i: int) -> Job | None:
        """The job ``name`` if it is known and has a pod ``i``."""
        job = self.ledger.jobs.get(name)
        return job if job is not None and 0 <= i < len(job.pods) else None

    def _pod_state(
        self, event: ev.PodEvicted | ev.PodCompleted | ev.PodFailed
    ) -> tuple[Job | None, int, int]:
        """The event's job (None if unknown), its pod's index and that pod's state."""
        job = self._pod(event.job, event.pod)
        return job, event.pod, (job.state[event.pod] if job is not None else -1)

    def _bind_requested(self, event: ev.BindRequested) -> None:
        job = self._pod(event.job, event.pod)
        if job is None:
            return
        if job.state[event.pod] == RELEASING:
            self._record_move(job, event.pod, event.node, event.gpus, event.gpu_share)
        else:
            self._bind(job, event.pod, event.node, event.gpus, event.gpu_share, event.pipelined)

    def _pod_bound(self, event: ev.PodBound) -> None:
        self.adoptions.answered(event.job, event.pod)
        job = self._pod(event.job, event.pod)
        if job is None:
            return
        i = event.pod
        if job.state[i] == PENDING:
            self._bind(job, i, event.node, event.gpus, event.gpu_share, False)
        if job.state[i] in (BINDING, PIPELINED):
            if job.state[i] == PIPELINED:
                self._transition(job, i, BINDING)
            was_running = BOUND in job.state
            job.bound_at[i] = event.at
            self._transition(job, i, BOUND)
            job.ever_ran = True
            if not was_running:
                job.last_start = event.at

    def _bind_failed(self, event: ev.BindFailed | ev.BindRejected) -> None:
        self.adoptions.answered(event.job, event.pod)
        job = self._pod(event.job, event.pod)
        if job is None:
            return
        if job.state[event.pod] == RELEASING and event.pod in job.moves:
            self._drop_move(job, event.pod)
        elif job.state[event.pod] in HOLDING:
            self._release(job, event.pod, pl.D_USED)

    def _eviction_requested(self, event: ev.EvictionRequested) -> None:
        job = self._pod(event.job, event.pod)
        if job is not None and job.state[event.pod] in HOLDING:
            i = event.pod
            if job.node[i] >= 0:
                self.node_table.move(job.pods[i], job.node[i], job.gpus[i], job.share[i], +1)
            self._transition(job, i, RELEASING)
            if event.action in RE_ARMING_ACTIONS:
                self.ledger.evicted_unclocked.add(job.name)

    def _pod_evicted(self, event: ev.PodEvicted) -> None:
        job, i, st = self._pod_state(event)
        if job is None:
            return
        if st == RELEASING:
            self._release(job, i, pl.D_REL)
            move = job.moves.get(i)
            if move is not None:
                self._drop_move(job, i)
                slot, gpus, share = move
                name = self.node_table.name_of(slot)
                if name is not None:
                    self._bind(job, i, name, list(gpus), share, True)
        elif st in HOLDING:
            self._release(job, i, pl.D_USED)

    def _pod_finished(self, event: ev.PodCompleted | ev.PodFailed) -> None:
        # A pod that exited, well or not, is done: its resources are free and it is not retried.
        job, i, st = self._pod_state(event)
        if job is None:
            return
        if st == RELEASING:
            self._let_go(job, i, pl.D_REL)
            if i in job.moves:
                self._drop_move(job, i)
        elif st in HOLDING:
            self._let_go(job, i, pl.D_USED)
        if st != COMPLETED:
            self._transition(job, i, COMPLETED, at=event.at)
            if self.forget_finished and job.n_completed == len(job.pods):
                self._delete_job(job.name)
                self.ledger.finished.add(job.name)

    def _note_reasons(self, changed: dict[str, str]) -> None:
        """The pending reasons a cycle recorded as changed ('' = no longer pending)."""
        for name, reason in changed.items():
            if reason:
                self.prev_reasons[name] = reason
            else:
                self.prev_reasons.pop(name, None)

    def _queues_changed(self) -> None:
        self.queue_version += 1
        self.version += 1

    def _advance_clock(self, clock: float) -> None:
        self.clock = clock if self.clock is None else max(self.clock, clock)
        self.ledger.note_evictions(clock)
        self.ledger.note_stale(clock)
        self.usage.forget_before(self.clock)

    # -- nodes ----------------------------------------------------------------------------------

    def _node_changed(self, spec: ev.NodeSpec) -> None:
        if self.serves(spec.pool):
            self.node_table.set(spec)
            self.version += 1
        elif spec.name in self.node_table.nodes:
            self._remove_node(spec.name)
            self.version += 1

    def _remove_node(self, name: str) -> None:
        slot = self.node_table.remove(name)
        if slot is not None:
            self.ledger.detach(slot)

    # -- jobs -----------------------------------------------------------------------------------

    def _create_job(self, e: ev.PodGroupCreated) -> None:
        job = self.ledger.create(e)
        # Every pod starts pending: counted in at once rather than by n transitions (one per pod of
        # every job that arrives, the fold's most frequent step).
        for i in range(len(job.pods)):
            self.queue_sums.count(job, i, PENDING, +1)
        if e.min_runtime:
            self.min_runtime_used = True
        self.adoptions.created(job)
        self.version += 1

    def _delete_job(self, name: str) -> None:
        job = self.ledger.jobs.get(name)
        if job is None:
            return
        for i in sorted(job.moves):
            self._drop_move(job, i)
        for i in range(len(job.pods)):
            st = job.state[i]
            if st == BOUND:
                self.usage.close(job, i, self.clock if self.clock is not None else job.bound_at[i])
            if st in HOLDING:
                self._let_go(job, i, pl.D_USED)
            elif st == RELEASING:
                self._let_go(job, i, pl.D_REL)
            self._count(job, i, st, -1)
        self.ledger.remove(name)
        self.adoptions.forget(name)
        self.version += 1

    # -- pods -----------------------------------------------------------------------------------

    def _bind(self, job: Job, i: int, node_name: str, gpus: list[int], share: float, pipelined: bool) -> None:
        if job.state[i] != PENDING:
            return
        node = self.node_table.nodes.get(node_name)
        req = job.pods[i]
        job.node[i] = node.slot if node is not None else -1
        job.gpus[i] = tuple(gpus)  # ints: the event's schema says so
        if req.kind == pl.WHOLE:
            job.share[i] = 0.0
            job.acct[i] = (req.gpu, req.cpu, req.memory)
        else:
            dev_mem = node.spec.resources.gpu_memory if node is not None else 0
            job.share[i] = share or max(_share_of(req.kind, req.share, req.gpu_memory, dev_mem), 0.0)
            job.acct[i] = (gpu_accounting(req, dev_mem), req.cpu, req.memory)
        slot = job.node[i]
        if slot >= 0:
            self.node_table.hold(req, slot, job.gpus[i], job.share[i], pl.D_USED, +1)
            self.node_table.mark_shared(req, slot, job.gpus[i], +1)
        self._transition(job, i, PIPELINED if pipelined else BINDING)

    def _release(self, job: Job, i: int, plane: int) -> None:
        """Pod i leaves its node (in ``plane``) and is pending again."""
        self._let_go(job, i, plane)
        self._transition(job, i, PENDING)
        job.node[i] = -1
        job.gpus[i] = ()
        job.share[i] = 0.0

    def _let_go(self, job: Job, i: int, plane: int) -> None:
        """Take pod i's resources off its node, in ``plane`` (used or releasing)."""
        slot = job.node[i]
        if slot >= 0:
            req, gpus = job.pods[i], job.gpus[i]
            self.node_table.hold(req, slot, gpus, job.share[i], plane, -1)
            self.node_table.mark_shared(req, slot, gpus, -1)

    def _record_move(self, job: Job, i: int, node_name: str, gpus: list[int], share: float) -> None:
        node = self.node_table.nodes.get(node_name)
        if node is None or i in job.moves:
            return
        req = job.pods[i]
        if not share:
            dev_mem = node.spec.resources.gpu_memory
            share = max(_share_of(req.kind, req.share, req.gpu_memory, dev_mem), 0.0)
        job.moves[i] = (
            node.slot,
            tuple(int(g) for g in gpus),
            share if req.kind in (pl.FRACTION, pl.MEMORY) else 0.0,
        )
        self._hold_target(job, i, +1)
        self.version += 1

    def _drop_move(self, job: Job, i: int) -> None:
        self._hold_target(job, i, -1)
        del job.moves[i]
        self.version += 1

    def _hold_target(self, job: Job, i: int, sign: int) -> None:
        """Hold (or let go of) the resources of pod i's move target, in the used plane."""
        slot, gpus, share = job.moves[i]
        req = job.pods[i]
        self.node_table.hold(req, slot, gpus, share, pl.D_USED, sign)
        self.node_table.mark_shared(req, slot, gpus, sign)

    def _transition(self, job: Job, i: int, new: int, at: float | None = None) -> None:
        old = job.state[i]
        job.state[i] = new
        # Binding -> bound, the step every pod takes, stays in one class: no sum, counter or set moves.
        if COUNT_CLASS[old] != COUNT_CLASS[new]:
            self._count(job, i, old, -1)
            self._count(job, i, new, +1)
            self.ledger.track(job)
        if old == BOUND and new != BOUND:
            if at is None:
                at = self.clock if self.clock is not None else job.bound_at[i]
            self.usage.close(job, i, at)
        self.version += 1

    def _count(self, job: Job, i: int, state: int, sign: int) -> None:
        """Count pod i of job, in ``state``, into its queue's sums and the job's counters."""
        self.queue_sums.count(job, i, state, sign)
        self.ledger.count(job, state, sign)

    # -- snapshots ------------------------------------------------------------------------------

    def image(self) -> StateImage:
        """The state as a snapshot holds it: each section's image, written canonically (sets sorted,
        caches left out, node ranks up to date, dicts in the order the log inserted their keys)."""
        cluster = ClusterImage(
            pools=sorted(self.pools) if self.pools is not None else None,
            forget_finished=self.forget_finished,
            version=self.version,
            queues=self.queues,
            prev_reasons=self.prev_reasons,
            queue_version=self.queue_version,
            clock=self.clock,
            min_runtime_used=self.min_runtime_used,
        )
        sections = (getattr(self, name).image() for name in SECTIONS)
        return StateImage(cluster, *sections)

    @classmethod
    def restore(cls, image: StateImage) -> ClusterState:
        """The state an image was taken of."""
        c = image.cluster
        pools = frozenset(c.pools) if c.pools is not None else None
        state = cls(pools, image.usage.usage_window, forget_finished=c.forget_finished)
        state.version = c.version
        state.queues = c.queues
        state.prev_reasons = c.prev_reasons
        state.queue_version = c.queue_version
        state.clock = c.clock
        state.min_runtime_used = c.min_runtime_used
        for name, section in SECTIONS.items():
            setattr(state, name, section.restore(getattr(image, name)))
        return state
