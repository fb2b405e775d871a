"""The allocator's cluster state, evolved event by event (``ClusterState.apply``).

Nodes live in arrays (``muster.kernels.placement.NodeArrays``) that events
update in place, so a cycle copies them instead of rebuilding a snapshot.
Jobs and their pods are small Python objects; per-queue sums of allocated
and requested resources are kept up to date on every pod transition.

Pod states and what they hold::

    PENDING    nothing; counts as request
    BINDING    node resources; counts as allocated (BindRequested seen)
    PIPELINED  node resources (placed on releasing ones); counts as neither
    BOUND      node resources; counts as allocated (PodBound seen)
    RELEASING  node resources, marked releasing; counts as neither (EvictionRequested)
    COMPLETED  nothing

Every transition is guarded by the current state, so a redelivered event
changes nothing.

A pod handed to the fleet already running (``AdoptPods``) stays PENDING until
the fleet answers: ``PodBound`` binds it where it runs, from when it started,
with no decision before it; ``BindFailed`` leaves it pending. Until then it
is listed in ``awaiting_adoption`` (once its group is known), and the live
allocator decides nothing: a cycle could otherwise place it a second time.

A pod that is moved (a victim re-placed elsewhere) gets an EvictionRequested
and then a pipelined BindRequested while it is RELEASING: the target is held
at once (so no later cycle gives it away) and the pod becomes PIPELINED there
when its PodEvicted arrives.

Two more things are kept for clock-dependent actions, both pure functions of
the log: when each gang was first seen running below min_available (by the
clock of the CycleCompleted that saw it), and, when ``usage_window`` is set,
every queue's bound-pod intervals within that window, for time-based fair
share. An interval starts at ``PodBound.at`` and ends at ``PodCompleted.at``,
or, for an eviction (whose confirmation carries no time), at the clock of the
last cycle read.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import msgspec
import numpy as np

from muster import events as ev
from muster.kernels import placement as pl

PENDING, BINDING, PIPELINED, BOUND, RELEASING, COMPLETED = range(6)
STATE_NAMES = ("pending", "binding", "pipelined", "bound", "releasing", "completed")
HOLDING = (BINDING, PIPELINED, BOUND)
ALLOCATED = (BINDING, BOUND)
ACTIVE = (BINDING, PIPELINED, BOUND)
# What _count keys a pod's state on (allocated, pending, completed, active): between two states of one
# class, a transition leaves every sum and counter as it was.
_COUNT_CLASS = {PENDING: 0, BINDING: 1, BOUND: 1, PIPELINED: 2, RELEASING: 3, COMPLETED: 4}

# columns of a queue's running sums
A_GPU, A_CPU, A_MEM, NP_GPU, NP_CPU, NP_MEM, R_GPU, R_CPU, R_MEM, R_GPU_MEM, R_PODS = range(11)
SUM_COLS = 11


REQUESTS_REMEMBERED = 4096
"""Distinct pod-spec lists whose requests a state keeps parsed (forgotten all at once beyond)."""
_encode = msgspec.json.Encoder().encode


@dataclass(frozen=True, slots=True)
class PodReq:
    """What one pod asks for, in base units, with what restricts its nodes."""

    gpu: float
    gpu_memory: int
    cpu: int
    memory: int
    ext: tuple[tuple[str, int], ...]
    node_selector: tuple[tuple[str, str], ...]
    gpu_models: tuple[str, ...]
    subgroup: str
    kind: int
    whole: int
    share: float
    invalid: str | None

    @property
    def spec_key(self) -> tuple:
        """Everything that decides which nodes this pod may use."""
        return (self.node_selector, self.gpu_models, tuple(name for name, _ in self.ext))


def pod_req(spec: ev.PodSpec, path: str) -> PodReq:
    r = spec.resources
    invalid = None
    try:
        kind = pl.pod_kind(r.gpu, r.gpu_memory)
    except ValueError as e:
        kind, invalid = pl.CPU_ONLY, f"{path}.resources.{e}"
    if r.gpu < 0 or r.cpu < 0 or r.memory < 0 or r.gpu_memory < 0:
        invalid = f"{path}.resources: negative request"
    return PodReq(
        gpu=float(r.gpu),
        gpu_memory=int(r.gpu_memory),
        cpu=int(r.cpu),
        memory=int(r.memory),
        ext=tuple(sorted((k, int(v)) for k, v in r.extended.items() if v)),
        node_selector=tuple(sorted(spec.node_selector.items())),
        gpu_models=tuple(sorted(spec.gpu_models)),
        subgroup=spec.subgroup,
        kind=kind,
        whole=int(r.gpu) if kind == pl.WHOLE else 0,
        share=float(r.gpu) if kind == pl.FRACTION else 0.0,
        invalid=invalid,
    )


@dataclass(slots=True)
class Job:
    """One pod group and the state of each of its pods."""

    name: str
    queue: str
    pool: str
    priority: int
    preemptible: bool
    min_available: int
    submitted_at: float
    pods: list[PodReq]
    subgroups: dict[str, int]
    topology: ev.Topology | None
    min_runtime: float | None
    state: list[int] = field(default_factory=list)
    node: list[int] = field(default_factory=list)
    gpus: list[tuple[int, ...]] = field(default_factory=list)
    share: list[float] = field(default_factory=list)
    acct: list[tuple[float, int, int]] = field(default_factory=list)
    bound_at: list[float] = field(default_factory=list)
    moves: dict[int, tuple[int, tuple[int, ...], float]] = field(default_factory=dict)
    """pod -> (node slot, devices, share) it is moving to once its eviction is confirmed"""
    workload_uid: str = ""
    ever_ran: bool = False
    last_start: float | None = None
    n_pending: int = 0
    n_active: int = 0
    n_running: int = 0
    n_completed: int = 0
    shape: int = -1
    """For a job placed whole in one attempt (no sub-groups or topology, min_available covering every pod,
    no gpu-memory pod): an id shared by every job of the same pool and pod requests; else -1."""

    @property
    def status(self) -> str:
        """pending | running | preempted | completed, as scenario-format.md defines them."""
        if self.pods and self.n_completed == len(self.pods):
            return "completed"
        if self.n_running:
            return "running"
        if self.ever_ran:
            return "preempted"
        return "pending"


@dataclass(slots=True)
class Node:
    slot: int
    spec: ev.NodeSpec


def is_stale(job: Job) -> bool:
    """Some pods run, but the gang (or one of its sub-groups) has fewer than its minimum, and none finished."""
    if job.n_active == 0 or job.n_completed > 0:
        return False
    if job.n_active < job.min_available:
        return True
    for group, minimum in sorted(job.subgroups.items()):
        active = sum(1 for i, req in enumerate(job.pods) if req.subgroup == group and job.state[i] in ACTIVE)
        if active < minimum:
            return True
    return False


def decayed_seconds(clock: float, window: float, half_life: float, start: float, end: float) -> float:
    """Seconds of [start, end) inside (clock - window, clock], each weighted by 2^(-age / half_life)."""
    a = max(start, clock - window)
    b = min(end, clock)
    if b <= a:
        return 0.0
    if half_life <= 0:
        return b - a
    tau = half_life / math.log(2)
    return tau * (math.exp(-(clock - b) / tau) - math.exp(-(clock - a) / tau))


def gpu_accounting(req: PodReq, dev_mem: int) -> float:
    """GPUs a placed pod counts for in its queue: a gpu-memory pod as memory / device memory, up to 0.01."""
    if req.kind == pl.MEMORY:
        if dev_mem <= 0:
            return 0.0
        return math.ceil(round(req.gpu_memory / dev_mem * 100, 9)) / 100
    return req.gpu


class ClusterState:
    """Everything the allocator knows, as a pure function of the events applied so far."""

    def __init__(
        self,
        pools: frozenset[str] | None = None,
        usage_window: float | None = None,
        *,
        forget_finished: bool = False,
    ) -> None:
        self.pools = pools
        self.usage_window = usage_window
        self.forget_finished = forget_finished
        self.finished: set[str] = set()
        """Names of jobs forgotten once finished (``forget_finished``): a PodGroupCreated of one creates nothing."""
        self.version = 0
        self.nodes: dict[str, Node] = {}
        self.free_slots: list[int] = []
        self.slot_names: list[str | None] = []
        self.arrays = pl.empty_nodes(0, 1, 0)
        self.ext_names: list[str] = []
        self.jobs: dict[str, Job] = {}
        self.queues: dict[str, ev.QueueSpec] = {}
        self.queue_sums: dict[str, list[float]] = {}
        self.pending_jobs: set[str] = set()
        self.running_jobs: set[str] = set()
        """Jobs with a pod holding resources (binding, bound, pipelined or releasing)."""
        self._pending_sorted: list[str] = []
        self._pending_added: list[str] = []
        self._pending_removed = False
        self.prev_reasons: dict[str, str] = {}
        self.node_version = 0
        self.ranks_dirty = False
        self.queue_version = 0
        self.clock: float | None = None
        """Clock of the last CycleCompleted read."""
        self.stale_candidates: set[str] = set()
        """Jobs with active pods but fewer than min_available of them (sub-groups checked later)."""
        self.stale_since: dict[str, float] = {}
        self.usage: dict[str, list[tuple[float, float, float, float, float]]] = {}
        """queue -> closed (start, end, gpu, cpu, memory) intervals of bound pods, when usage_window is set."""
        self.min_runtime_used = False
        """Whether any job or queue sets a min_runtime (else protection never applies)."""
        self.shapes: dict[tuple[str, tuple[PodReq, ...]], int] = {}
        """(pool, pod requests) -> id, numbered in order of first appearance in the log (see ``Job.shape``)."""
        # Most jobs repeat a few pod specs: their requests (and shape ids) are read once per distinct
        # spec list, keyed by its JSON, instead of parsed and hashed again for every job.
        self._requests_of: dict[bytes, tuple[tuple[PodReq, ...], bool]] = {}
        self._shape_of: dict[tuple[str, bytes], int] = {}
        self.adoptions: dict[tuple[str, str], set[int]] = {}
        """(job, submission) -> pods handed to the fleet already running, whose group is not known yet."""
        self.awaiting_adoption: set[tuple[str, int]] = set()
        """Pending pods of known jobs handed to the fleet already running, which it has not answered yet."""

    # -- nodes ---------------------------------------------------------------------------------

    def serves(self, pool: str) -> bool:
        return self.pools is None or pool in self.pools

    def _ensure_capacity(self, slots: int, gpus: int, n_ext: int) -> None:
        a = self.arrays
        n, g, e = a.ints.shape[0], a.dev.shape[2], a.ext.shape[2]
        if slots <= n and gpus <= g and n_ext <= e:
            return
        new = pl.empty_nodes(max(slots, n * 2, 16) if slots > n else n, max(g, gpus), max(e, n_ext))
        new.ints[:n] = a.ints
        new.dev[:, :n, :g] = a.dev
        new.ext[:, :n, :e] = a.ext
        self.arrays = new

    def _ext_index(self, name: str) -> int:
        if name not in self.ext_names:
            self.ext_names.append(name)
            self._ensure_capacity(0, 0, len(self.ext_names))
        return self.ext_names.index(name)

    def _set_node(self, spec: ev.NodeSpec) -> None:
        node = self.nodes.get(spec.name)
        gpus = int(spec.resources.gpu)
        for name in spec.resources.extended:
            self._ext_index(name)
        if node is None:
            slot = self.free_slots.pop() if self.free_slots else len(self.slot_names)
            if slot == len(self.slot_names):
                self.slot_names.append(spec.name)
            else:
                self.slot_names[slot] = spec.name
            self._ensure_capacity(slot + 1, gpus, len(self.ext_names))
            self.arrays.ints[slot] = 0
            self.arrays.dev[:, slot] = 0.0
            self.arrays.ext[:, slot] = 0
            node = self.nodes[spec.name] = Node(slot, spec)
            self.ranks_dirty = True
        else:
            self._ensure_capacity(0, gpus, len(self.ext_names))
            node.spec = spec
        ints = self.arrays.ints[node.slot]
        ints[pl.N_GPUS] = gpus
        ints[pl.N_DEV_MEM] = int(spec.resources.gpu_memory)
        ints[pl.N_CPU_CAP] = int(spec.resources.cpu)
        ints[pl.N_MEM_CAP] = int(spec.resources.memory)
        ext = self.arrays.ext[pl.E_CAP, node.slot]
        ext[:] = 0
        for name, amount in spec.resources.extended.items():
            ext[self.ext_names.index(name)] = int(amount)
        self.node_version += 1

    def rerank(self) -> None:
        """Number nodes by name (the tie-break of placement); done lazily, before a cycle reads the arrays."""
        if not self.ranks_dirty:
            return
        self.ranks_dirty = False
        for rank, name in enumerate(sorted(self.nodes)):
            self.arrays.ints[self.nodes[name].slot, pl.N_RANK] = rank

    def _remove_node(self, name: str) -> None:
        node = self.nodes.pop(name, None)
        if node is None:
            return
        self.slot_names[node.slot] = None
        self.arrays.ints[node.slot] = 0
        self.arrays.dev[:, node.slot] = 0.0
        self.arrays.ext[:, node.slot] = 0
        self.free_slots.append(node.slot)
        self.ranks_dirty = True
        # pods still recorded on the node keep their state; they are freed by their own events
        for job in self.jobs.values():
            for i, slot in enumerate(job.node):
                if slot == node.slot and job.state[i] in (*HOLDING, RELEASING):
                    job.node[i] = -1
        self.node_version += 1

    def min_device_memory(self) -> int:
        mems = [n.spec.resources.gpu_memory for n in self.nodes.values() if n.spec.resources.gpu_memory > 0]
        return min(mems) if mems else 0

    # -- resources held by a pod ----------------------------------------------------------------

    def _hold(self, job: Job, i: int, sign: int, plane: int) -> None:
        """Add (sign=1) or remove (sign=-1) pod i's resources on its node, in the used or releasing plane."""
        slot = job.node[i]
        if slot < 0:
            return
        req = job.pods[i]
        a = self.arrays
        col_cpu = pl.N_CPU_USED if plane == pl.D_USED else pl.N_CPU_REL
        col_mem = pl.N_MEM_USED if plane == pl.D_USED else pl.N_MEM_REL
        a.ints[slot, col_cpu] += sign * req.cpu
        a.ints[slot, col_mem] += sign * req.memory
        eplane = pl.E_USED if plane == pl.D_USED else pl.E_REL
        for name, amount in req.ext:
            if name in self.ext_names:
                a.ext[eplane, slot, self.ext_names.index(name)] += sign * amount
        g = a.dev.shape[2]
        if req.kind == pl.WHOLE:
            for d in job.gpus[i]:
                if 0 <= d < g:
                    a.dev[plane, slot, d] = max(0.0, a.dev[plane, slot, d] + sign * 1.0)
        elif req.kind in (pl.FRACTION, pl.MEMORY) and job.gpus[i]:
            d = job.gpus[i][0]
            if 0 <= d < g:
                v = a.dev[plane, slot, d] + sign * job.share[i]
                a.dev[plane, slot, d] = 0.0 if v < pl.EPS else v
        self.node_version += 1

    def _frac_mark(self, job: Job, i: int, sign: int) -> None:
        req = job.pods[i]
        slot = job.node[i]
        if slot >= 0 and req.kind in (pl.FRACTION, pl.MEMORY) and job.gpus[i]:
            d = job.gpus[i][0]
            if 0 <= d < self.arrays.dev.shape[2]:
                self.arrays.dev[pl.D_FRAC, slot, d] = max(0.0, self.arrays.dev[pl.D_FRAC, slot, d] + sign)

    # -- queue sums -----------------------------------------------------------------------------

    def _sums(self, queue: str) -> list[float]:
        s = self.queue_sums.get(queue)
        if s is None:
            s = self.queue_sums[queue] = [0.0] * SUM_COLS
        return s

    def _count(self, job: Job, i: int, state: int, sign: int) -> None:
        """Count pod i of job, in ``state``, into its queue's sums and the job's counters."""
        s = self._sums(job.queue)
        req = job.pods[i]
        if state in HOLDING:
            # A pipelined pod is its queue's already: a cycle charges it when it decides it, so one that
            # runs before the binder confirms must count it too, or the queue looks short by that much
            # and reclaims more than its fair share.
            gpu, cpu, mem = job.acct[i]
            s[A_GPU] += sign * gpu
            s[A_CPU] += sign * cpu
            s[A_MEM] += sign * mem
            if not job.preemptible:
                s[NP_GPU] += sign * gpu
                s[NP_CPU] += sign * cpu
                s[NP_MEM] += sign * mem
        if state in ALLOCATED:
            job.n_running += sign
            if job.n_running == 0:
                self.running_jobs.discard(job.name)
            elif sign > 0 and job.n_running == 1:
                self.running_jobs.add(job.name)
        elif state == PENDING:
            s[R_GPU] += sign * (0.0 if req.kind == pl.MEMORY else req.gpu)
            s[R_GPU_MEM] += sign * (req.gpu_memory if req.kind == pl.MEMORY else 0)
            s[R_CPU] += sign * req.cpu
            s[R_MEM] += sign * req.memory
            s[R_PODS] += sign
            job.n_pending += sign
        elif state == COMPLETED:
            job.n_completed += sign
        if state in ACTIVE:
            job.n_active += sign

    def _transition(self, job: Job, i: int, new: int, at: float | None = None) -> None:
        old = job.state[i]
        job.state[i] = new
        # Binding -> bound, the step every pod takes, stays in one class: no sum, counter or set moves.
        if _COUNT_CLASS[old] != _COUNT_CLASS[new]:
            self._count(job, i, old, -1)
            self._count(job, i, new, +1)
            self._track(job)
        if old == BOUND and new != BOUND:
            if at is None:
                at = self.clock if self.clock is not None else job.bound_at[i]
            self._close_usage(job, i, at)
        self.version += 1

    def _track(self, job: Job) -> None:
        """Keep the pending and stale-candidate sets in step with the job's counters."""
        if job.n_pending > 0:
            if job.name not in self.pending_jobs:
                self.pending_jobs.add(job.name)
                self._pending_added.append(job.name)
        elif job.name in self.pending_jobs:
            self.pending_jobs.discard(job.name)
            self._pending_removed = True
        if job.n_active > 0 and (job.n_active < job.min_available or job.subgroups):
            self.stale_candidates.add(job.name)
        else:
            self.stale_candidates.discard(job.name)
            self.stale_since.pop(job.name, None)

    # -- events ---------------------------------------------------------------------------------

    def apply(self, event: ev.Event) -> None:
        """Evolve from one event; events about other pools, unknown jobs or impossible transitions change nothing."""
        match event:
            # The events every pod brings come first: a match tries its cases in order.
            case ev.BindRequested():
                job = self.jobs.get(event.job)
                if job is not None and 0 <= event.pod < len(job.pods) and job.state[event.pod] == RELEASING:
                    self._record_move(job, event.pod, event.node, event.gpus, event.gpu_share)
                else:
                    self._bind(event.job, event.pod, event.node, event.gpus, event.gpu_share, event.pipelined)
            case ev.PodBound():
                if self.awaiting_adoption:
                    self.awaiting_adoption.discard((event.job, event.pod))
                job = self.jobs.get(event.job)
                if job is None or not 0 <= event.pod < len(job.pods):
                    return
                if job.state[event.pod] == PENDING:
                    self._bind(event.job, event.pod, event.node, event.gpus, event.gpu_share, False)
                if job.state[event.pod] in (BINDING, PIPELINED):
                    if job.state[event.pod] == PIPELINED:
                        self._transition(job, event.pod, BINDING)
                    was_running = BOUND in job.state
                    job.bound_at[event.pod] = event.at
                    self._transition(job, event.pod, BOUND)
                    job.ever_ran = True
                    if not was_running:
                        job.last_start = event.at
            case ev.PodGroupCreated():
                if (
                    self.serves(event.pool)
                    and event.name not in self.jobs
                    and event.name not in self.finished
                ):
                    self._create_job(event)
            case ev.NodeRegistered(node=spec) | ev.NodeUpdated(node=spec):
                if self.serves(spec.pool):
                    self._set_node(spec)
                    self.version += 1
                elif spec.name in self.nodes:
                    self._remove_node(spec.name)
                    self.version += 1
            case ev.NodeRemoved(name=name):
                if name in self.nodes:
                    self._remove_node(name)
                    self.version += 1
            case ev.QueueUpserted(queue=spec):
                if self.queues.get(spec.name) != spec:
                    self.queues[spec.name] = spec
                    if spec.min_runtime is not None:
                        self.min_runtime_used = True
                    self.queue_version += 1
                    self.version += 1
            case ev.QueueDeleted(name=name):
                if self.queues.pop(name, None) is not None:
                    self.queue_version += 1
                    self.version += 1
            case ev.PodGroupDeleted(name=name):
                self._delete_job(name)
            case ev.BindFailed() | ev.BindRejected():
                if self.awaiting_adoption:
                    self.awaiting_adoption.discard((event.job, event.pod))
                job = self.jobs.get(event.job)
                if job is None or not 0 <= event.pod < len(job.pods):
                    return
                if job.state[event.pod] == RELEASING and event.pod in job.moves:
                    self._drop_move(job, event.pod)
                elif job.state[event.pod] in HOLDING:
                    self._release(job, event.pod, pl.D_USED)
            case ev.EvictionRequested():
                job = self.jobs.get(event.job)
                if job is not None and 0 <= event.pod < len(job.pods) and job.state[event.pod] in HOLDING:
                    self._hold(job, event.pod, -1, pl.D_USED)
                    self._hold(job, event.pod, +1, pl.D_REL)
                    self._transition(job, event.pod, RELEASING)
            case ev.PodEvicted():
                job = self.jobs.get(event.job)
                if job is None or not 0 <= event.pod < len(job.pods):
                    return
                st = job.state[event.pod]
                if st == RELEASING:
                    self._release(job, event.pod, pl.D_REL)
                    move = job.moves.get(event.pod)
                    if move is not None:
                        self._drop_move(job, event.pod)
                        slot, gpus, share = move
                        name = self.slot_names[slot] if 0 <= slot < len(self.slot_names) else None
                        if name is not None:
                            self._bind(job.name, event.pod, name, list(gpus), share, True)
                elif st in HOLDING:
                    self._release(job, event.pod, pl.D_USED)
            case ev.PodCompleted() | ev.PodFailed():
                # A pod that exited, well or not, is done: its resources are free and it is not retried.
                job = self.jobs.get(event.job)
                if job is None or not 0 <= event.pod < len(job.pods):
                    return
                st = job.state[event.pod]
                if st == RELEASING:
                    self._hold(job, event.pod, -1, pl.D_REL)
                    if event.pod in job.moves:
                        self._drop_move(job, event.pod)
                elif st in HOLDING:
                    self._hold(job, event.pod, -1, pl.D_USED)
                if st in (*HOLDING, RELEASING):
                    self._frac_mark(job, event.pod, -1)
                if st != COMPLETED:
                    self._transition(job, event.pod, COMPLETED, at=event.at)
                    if self.forget_finished and job.n_completed == len(job.pods):
                        self._delete_job(job.name)
                        self.finished.add(job.name)
            case ev.AdoptPods():
                if self.serves(event.pool):
                    self._adopt(event)
            case ev.CycleCompleted():
                self._advance_clock(event.clock)
                self._note_reasons(event.pending)
            case ev.PendingReasons():
                # Part of a cycle's record, just before its CycleCompleted: the clock advances with that.
                self._note_reasons(event.reasons)
            case _:
                return

    def _note_reasons(self, changed: dict[str, str]) -> None:
        """The pending reasons a cycle recorded as changed ('' = no longer pending)."""
        for name, reason in changed.items():
            if reason:
                self.prev_reasons[name] = reason
            else:
                self.prev_reasons.pop(name, None)

    def _pod_requests(self, specs: list[ev.PodSpec]) -> tuple[bytes, tuple[PodReq, ...], bool]:
        """(key, every pod's request, whether they may share a shape) of a job's pod specs."""
        key = _encode(specs)
        hit = self._requests_of.get(key)
        if hit is None:
            pods: list[PodReq] = []
            for si, spec in enumerate(specs):
                pods.extend([pod_req(spec, f"pods[{si}]")] * max(0, spec.count))
            if len(self._requests_of) >= REQUESTS_REMEMBERED:
                self._requests_of.clear()
                self._shape_of.clear()
            plain = all(p.kind != pl.MEMORY and p.invalid is None for p in pods)
            hit = self._requests_of[key] = (tuple(pods), plain)
        return key, hit[0], hit[1]

    def _create_job(self, e: ev.PodGroupCreated) -> None:
        key, requests, plain = self._pod_requests(e.pods)
        pods = list(requests)
        n = len(pods)
        job = Job(
            name=e.name,
            queue=e.queue,
            pool=e.pool,
            priority=e.priority,
            preemptible=e.preemptible,
            min_available=max(0, min(e.min_available, n)),
            submitted_at=e.submitted_at,
            pods=pods,
            subgroups={sg.name: sg.min_available for sg in e.subgroups},
            topology=e.topology,
            min_runtime=e.min_runtime,
            state=[PENDING] * n,
            node=[-1] * n,
            gpus=[()] * n,
            share=[0.0] * n,
            acct=[(0.0, 0, 0)] * n,
            bound_at=[0.0] * n,
            workload_uid=e.workload_uid,
        )
        if n and plain and not job.subgroups and job.topology is None and max(job.min_available, 1) >= n:
            shape = self._shape_of.get((job.pool, key))
            if shape is None:
                shape = self.shapes.setdefault((job.pool, requests), len(self.shapes))
                self._shape_of[(job.pool, key)] = shape
            job.shape = shape
        if e.min_runtime:
            self.min_runtime_used = True
        self.jobs[e.name] = job
        # Every pod starts pending: counted in at once rather than by n transitions (one per pod of
        # every job that arrives, the fold's most frequent step).
        for i in range(n):
            self._count(job, i, PENDING, +1)
        if n and job.name not in self.pending_jobs:
            self.pending_jobs.add(job.name)
            self._pending_added.append(job.name)
        self.stale_candidates.discard(job.name)
        self.stale_since.pop(job.name, None)
        if self.adoptions:
            for i in sorted(self.adoptions.pop((job.name, job.workload_uid), ())):
                self._await_adoption(job, i)
        self.version += 1

    def _adopt(self, event: ev.AdoptPods) -> None:
        """Note the pods the fleet is to report: at once for a known group, else once it is created."""
        for pod in event.pods:
            job = self.jobs.get(pod.job)
            if job is not None and job.workload_uid == event.workload_uid:
                self._await_adoption(job, pod.pod)
            else:
                self.adoptions.setdefault((pod.job, event.workload_uid), set()).add(pod.pod)

    def _await_adoption(self, job: Job, i: int) -> None:
        # The fleet answers every pod it does not run yet; a pod that is not pending is not its to adopt.
        if 0 <= i < len(job.pods) and job.state[i] == PENDING:
            self.awaiting_adoption.add((job.name, i))

    def _delete_job(self, name: str) -> None:
        job = self.jobs.get(name)
        if job is None:
            return
        for i in sorted(job.moves):
            self._drop_move(job, i)
        for i in range(len(job.pods)):
            st = job.state[i]
            if st == BOUND:
                self._close_usage(job, i, self.clock if self.clock is not None else job.bound_at[i])
            if st in HOLDING:
                self._hold(job, i, -1, pl.D_USED)
            elif st == RELEASING:
                self._hold(job, i, -1, pl.D_REL)
            if st in (*HOLDING, RELEASING):
                self._frac_mark(job, i, -1)
            self._count(job, i, st, -1)
        del self.jobs[name]
        if self.awaiting_adoption:
            self.awaiting_adoption = {key for key in self.awaiting_adoption if key[0] != name}
        if name in self.pending_jobs:
            self.pending_jobs.discard(name)
            self._pending_removed = True
        self.stale_candidates.discard(name)
        self.stale_since.pop(name, None)
        self.version += 1

    def _bind(
        self, name: str, i: int, node_name: str, gpus: list[int], share: float, pipelined: bool
    ) -> None:
        job = self.jobs.get(name)
        if job is None or not 0 <= i < len(job.pods) or job.state[i] != PENDING:
            return
        node = self.nodes.get(node_name)
        req = job.pods[i]
        job.node[i] = node.slot if node is not None else -1
        job.gpus[i] = tuple(gpus)  # ints: the event's schema says so
        if req.kind == pl.WHOLE:
            job.share[i] = 0.0
            job.acct[i] = (req.gpu, req.cpu, req.memory)
            self._hold(job, i, +1, pl.D_USED)
        else:
            dev_mem = node.spec.resources.gpu_memory if node is not None else 0
            if req.kind == pl.FRACTION:
                job.share[i] = share or req.share
            elif req.kind == pl.MEMORY:
                job.share[i] = share or (req.gpu_memory / dev_mem if dev_mem else 0.0)
            else:
                job.share[i] = 0.0
            job.acct[i] = (gpu_accounting(req, dev_mem), req.cpu, req.memory)
            self._hold(job, i, +1, pl.D_USED)
            self._frac_mark(job, i, +1)
        self._transition(job, i, PIPELINED if pipelined else BINDING)

    def _record_move(self, job: Job, i: int, node_name: str, gpus: list[int], share: float) -> None:
        node = self.nodes.get(node_name)
        if node is None or i in job.moves:
            return
        req = job.pods[i]
        if req.kind == pl.MEMORY and not share:
            dev_mem = node.spec.resources.gpu_memory
            share = req.gpu_memory / dev_mem if dev_mem else 0.0
        elif req.kind == pl.FRACTION and not share:
            share = req.share
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
        saved = (job.node[i], job.gpus[i], job.share[i])
        job.node[i], job.gpus[i], job.share[i] = slot, gpus, share
        self._hold(job, i, sign, pl.D_USED)
        self._frac_mark(job, i, sign)
        job.node[i], job.gpus[i], job.share[i] = saved

    # -- history for clock-dependent actions ------------------------------------------------------

    def _advance_clock(self, clock: float) -> None:
        self.clock = clock if self.clock is None else max(self.clock, clock)
        for name in sorted(self.stale_candidates):
            if not is_stale(self.jobs[name]):
                self.stale_since.pop(name, None)
            elif name not in self.stale_since:
                self.stale_since[name] = clock
        if self.usage_window is not None:
            horizon = self.clock - self.usage_window
            for queue in sorted(self.usage):
                kept = [iv for iv in self.usage[queue] if iv[1] > horizon]
                if len(kept) != len(self.usage[queue]):
                    self.usage[queue] = kept

    def _close_usage(self, job: Job, i: int, end: float) -> None:
        if self.usage_window is None:
            return
        start = job.bound_at[i]
        end = max(start, end)
        if end > start:
            gpu, cpu, mem = job.acct[i]
            self.usage.setdefault(job.queue, []).append((start, end, gpu, float(cpu), float(mem)))

    def queue_usage(self, clock: float, window: float, half_life: float) -> dict[str, list[float]]:
        """Per leaf queue, resource-seconds of bound pods within ``window`` before ``clock``,
        each second weighted by 2^(-age / half_life) (no decay when half_life is 0)."""
        out: dict[str, list[float]] = {}

        def add(queue: str, start: float, end: float, amounts: tuple[float, float, float]) -> None:
            w = decayed_seconds(clock, window, half_life, start, end)
            if w > 0:
                row = out.setdefault(queue, [0.0, 0.0, 0.0])
                for r in range(3):
                    row[r] += w * amounts[r]

        for queue in sorted(self.usage):
            for start, end, gpu, cpu, mem in self.usage[queue]:
                add(queue, start, end, (gpu, cpu, mem))
        for name in sorted(self.jobs):
            job = self.jobs[name]
            if not job.n_running:
                continue
            for i, st in enumerate(job.state):
                if st == BOUND:
                    gpu, cpu, mem = job.acct[i]
                    add(job.queue, job.bound_at[i], clock, (gpu, float(cpu), float(mem)))
        return out

    def _release(self, job: Job, i: int, plane: int) -> None:
        self._hold(job, i, -1, plane)
        self._frac_mark(job, i, -1)
        self._transition(job, i, PENDING)
        job.node[i] = -1
        job.gpus[i] = ()
        job.share[i] = 0.0

    # -- views used by cycles -------------------------------------------------------------------

    def sorted_pending(self) -> list[str]:
        """Names of the jobs with pending pods, sorted; do not modify. Kept between calls and merged with
        what changed since, as sorting 100k names from a set costs more than the merge."""
        if self._pending_added or self._pending_removed:
            pending = self.pending_jobs
            added = {n for n in self._pending_added if n in pending}
            keep = self._pending_sorted
            if self._pending_removed or added:
                keep = [n for n in keep if n in pending and n not in added]
            keep.extend(sorted(added))
            keep.sort()  # two sorted runs: a linear merge
            self._pending_sorted = keep
            self._pending_added = []
            self._pending_removed = False
        return self._pending_sorted

    def served_node_mask(self) -> np.ndarray:
        mask = np.zeros(self.arrays.ints.shape[0], dtype=np.bool_)
        for node in self.nodes.values():
            mask[node.slot] = True
        return mask

    def totals(self) -> np.ndarray:
        """gpu devices, cpu millicores, memory bytes over every node served."""
        mask = self.served_node_mask()
        ints = self.arrays.ints
        return np.array(
            [ints[mask, pl.N_GPUS].sum(), ints[mask, pl.N_CPU_CAP].sum(), ints[mask, pl.N_MEM_CAP].sum()],
            dtype=np.float64,
        )
