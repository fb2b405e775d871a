"""Jobs and their pods as the allocator's state records them: what each pod asks for, and its state.

Pod states and what they hold::

    PENDING    nothing; counts as request
    BINDING    node resources; counts as allocated and running (BindRequested seen)
    PIPELINED  node resources (placed on releasing ones); counts as allocated, not running
    BOUND      node resources; counts as allocated and running (PodBound seen)
    RELEASING  node resources, marked releasing; counts as neither (EvictionRequested)
    COMPLETED  nothing
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from muster import events as ev
from muster import mig
from muster.kernels import placement as pl
from muster.kernels.share import UNKNOWN_SHARE, device_share

from ..subgroup_tree import Tree, leaf_below_minimum, tree_of

PENDING, BINDING, PIPELINED, BOUND, RELEASING, COMPLETED = range(6)
STATE_NAMES = ("pending", "binding", "pipelined", "bound", "releasing", "completed")
HOLDING = (BINDING, PIPELINED, BOUND)
ALLOCATED = (BINDING, BOUND)
ACTIVE = (BINDING, PIPELINED, BOUND)
# What a pod's state counts as (allocated, pending, completed, active): between two states of one
# class, a transition leaves every sum and counter as it was.
COUNT_CLASS = {PENDING: 0, BINDING: 1, BOUND: 1, PIPELINED: 2, RELEASING: 3, COMPLETED: 4}


@dataclass(frozen=True, slots=True)
class PodReq:
    """What one pod asks for, in base units, with what restricts its nodes."""

    gpu: float
    """The GPUs it counts for in its queue (kai-semantics §17): devices or a device's fraction, plus g per
    MIG instance of a ``<g>g`` profile. Where it goes on a node is ``kind``, ``whole``, ``share`` and
    ``ext`` (MIG instances are extended resources there)."""
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
    runtime: str = ""
    """What the pod is (its group's ``runtime``): only nodes that run that kind may take it."""
    tolerations: tuple[ev.Toleration, ...] = ()
    node_affinity: tuple[ev.NodeSelectorTerm, ...] = ()
    """Required node affinity terms (one must match)."""
    gpu_request: str = mig.CPU_ONLY
    """What kind of GPU it asks for, as KAI's node predicate tells pods apart (``muster.mig.request_type``):
    a node's MIG strategy admits one kind only."""
    labels: tuple[tuple[str, str], ...] = ()
    """The pod's labels, sorted: what pod (anti-)affinity terms select."""
    pod_affinity: tuple[ev.PodAffinityTerm, ...] = ()
    pod_anti_affinity: tuple[ev.PodAffinityTerm, ...] = ()
    preferred_pod_affinity: tuple[ev.WeightedPodAffinityTerm, ...] = ()
    preferred_pod_anti_affinity: tuple[ev.WeightedPodAffinityTerm, ...] = ()
    """Required and preferred pod affinity and anti-affinity terms (``muster.pod_affinity``). Not in
    ``spec_key``: they depend on where other pods are, so the session applies them pod by pod
    (``PodAffinityView``)."""

    @property
    def spec_key(self) -> tuple:
        """Everything that decides which nodes this pod may use."""
        return (
            self.node_selector,
            self.gpu_models,
            tuple(name for name, _ in self.ext),
            self.runtime,
            self.tolerations,
            self.node_affinity,
            self.gpu_request,
        )

    @property
    def has_pod_affinity(self) -> bool:
        """Whether the pod has any pod affinity or anti-affinity term, required or preferred."""
        return bool(
            self.pod_affinity
            or self.pod_anti_affinity
            or self.preferred_pod_affinity
            or self.preferred_pod_anti_affinity
        )


def pod_req(spec: ev.PodSpec, path: str, runtime: str = "") -> PodReq:
    """The request of one pod of ``spec`` in a group of ``runtime``; an invalid one names what is wrong,
    under ``path``."""
    r = spec.resources
    invalid = None
    try:
        kind = pl.pod_kind(r.gpu, r.gpu_memory)
    except ValueError as e:
        kind, invalid = pl.CPU_ONLY, f"{path}.resources.{e}"
    if r.gpu < 0 or r.cpu < 0 or r.memory < 0 or r.gpu_memory < 0:
        invalid = f"{path}.resources: negative request"
    try:
        mig.check_request(r.gpu, r.gpu_memory, r.extended)
    except mig.MigError as e:
        invalid = f"{path}.resources.extended[{e.name!r}]: {e.message}"
    ext = tuple(sorted((k, int(v)) for k, v in r.extended.items() if v))
    return PodReq(
        # the pod's GPU quantity for its queue: a MIG pod's instances are folded in here, so the
        # accounting, the capacity checks and the kernels all read one figure
        gpu=mig.pod_gpus(r.gpu, r.extended),
        gpu_memory=int(r.gpu_memory),
        cpu=int(r.cpu),
        memory=int(r.memory),
        ext=ext,
        node_selector=tuple(sorted(spec.node_selector.items())),
        gpu_models=tuple(sorted(spec.gpu_models)),
        subgroup=spec.subgroup,
        kind=kind,
        whole=int(r.gpu) if kind == pl.WHOLE else 0,
        share=float(r.gpu) if kind == pl.FRACTION else 0.0,
        invalid=invalid,
        runtime=runtime,
        tolerations=tuple(spec.tolerations),
        node_affinity=tuple(spec.node_affinity),
        gpu_request=mig.request_type(kind == pl.WHOLE, kind in (pl.FRACTION, pl.MEMORY), (k for k, _ in ext)),
        labels=tuple(sorted(spec.labels.items())),
        pod_affinity=tuple(spec.pod_affinity),
        pod_anti_affinity=tuple(spec.pod_anti_affinity),
        preferred_pod_affinity=tuple(spec.preferred_pod_affinity),
        preferred_pod_anti_affinity=tuple(spec.preferred_pod_anti_affinity),
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
    subgroups: tuple[ev.SubGroup, ...]
    """The sub-group tree as the PodGroupCreated listed it (empty: one gang of ``min_available``)."""
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
    stale_gang_grace: float | None = None
    """Its own stale-gang grace in seconds (negative: never evicted); None: the allocator's."""
    preemption_delay: float | None = None
    """Seconds after ``submitted_at`` or ``last_evicted_at`` it may not make anyone be evicted (None, 0: none)."""
    last_evicted_at: float | None = None
    """Clock of the last cycle that reclaim, preempt or consolidate evicted one of its pods in."""
    min_subgroup: int | None = None
    """Top-level sub-groups that must be satisfied (None: all)."""

    @property
    def tree(self) -> Tree:
        """The compiled sub-group tree (only for a job with ``subgroups``)."""
        return tree_of(self.subgroups, self.min_subgroup)

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


def is_stale(job: Job) -> bool:
    """Some pods run, but the gang (with sub-groups: some leaf, §10) has fewer than its minimum, and none
    finished."""
    if job.n_active == 0 or job.n_completed > 0:
        return False
    if not job.subgroups:
        return job.n_active < job.min_available
    tree = job.tree
    return leaf_below_minimum(tree, leaf_counts(tree, job.pods, lambda i: job.state[i] in ACTIVE))


def leaf_counts(tree: Tree, pods: list[PodReq], counted) -> list[int]:
    """Per tree node, how many pods of its leaf ``counted(pod index)`` accepts."""
    counts = [0] * len(tree.names)
    leaf_of = tree.leaf_of
    for i, req in enumerate(pods):
        node = leaf_of.get(req.subgroup)
        if node is not None and counted(i):
            counts[node] += 1
    return counts


def gpu_accounting(req: PodReq, dev_mem: int) -> float:
    """GPUs a placed pod counts for in its queue: a gpu-memory pod as memory / device memory, up to 0.01;
    any other its ``gpu`` (devices, a fraction, MIG slices)."""
    if req.kind == pl.MEMORY:
        share = device_share.py_func(pl.MEMORY, 0.0, req.gpu_memory, dev_mem)
        return 0.0 if share == UNKNOWN_SHARE else math.ceil(round(share * 100, 9)) / 100
    return req.gpu
