"""A simulated GPU fleet: binds, evicts and completes pods, as pure logic.

The simulator and the live binder's sim backend share it. ``apply`` reads
events from the log (nodes, pod groups, decisions, and confirmations,
including its own); ``step(clock)`` returns the confirmations now due:

1. for every requested eviction and bind, in the order they were requested
   (a pipelined bind after the evictions it waits for, an eviction after the
   bind of the pod it evicts): ``PodEvicted`` (in simulation an evicted pod
   releases its resources at once; a pod not running is evicted too, one
   that finished is not), ``PodBound`` (``at=clock``) or ``BindFailed``; a
   bind that would over-commit a node or a device fails, always;
2. ``PodCompleted`` for every pod whose job's ``duration`` of run time has
   passed, in order of due time, job, pod.

Pods handed over already running (``AdoptPods``) wait until the fleet has
read their group (the one made from the named submission); they are then
answered in their turn like a bind, with ``PodBound`` at the time they
started, or ``BindFailed``. An adopted pod may run on a cordoned node (a
cordon stops new pods, not running ones); every other check of a bind holds.

A node runs only the pods of the runtimes it declares (``muster.runtimes``):
in simulation a node may stand for a machine that runs commands or images,
and the fleet plays its part; a bind of a pod the node does not run fails,
so a command is never shown running where nothing runs it.

A pod is ``(job, index)``; the index runs over the job's pod specs
expanded in order.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from muster import events as ev
from muster import runtimes
from muster.fact_admission import FACT_TYPES, NOWHERE, UNCHECKED, refusal
from muster.kernels import share as share_rule
from muster.kernels.share import FRACTION, MEMORY, UNKNOWN_SHARE, pod_kind
from muster.runtimes import is_agent_node
from muster.tolerances import EPS

# The rule in plain Python: one call per bind, where entering a compiled function costs more than it.
share_of_device = share_rule.device_share.py_func

_BIND, _EVICT = "bind", "evict"

PodKey = tuple[str, int]


@dataclass
class _Device:
    whole: PodKey | None = None
    shares: dict[PodKey, float] = field(default_factory=dict)

    @property
    def used(self) -> float:
        return 1.0 if self.whole is not None else sum(self.shares.values())


@dataclass
class _Node:
    spec: ev.NodeSpec
    devices: list[_Device]
    cpu: int = 0
    memory: int = 0
    extended: dict[str, int] = field(default_factory=dict)
    removed: bool = False


@dataclass(frozen=True)
class BoundPod:
    """A pod the fleet is running."""

    job: str
    pod: int
    node: str
    gpus: tuple[int, ...]
    share: float
    request: ev.Resources
    started: float


# Stands for a pod no longer running: its start (NaN) matches no due completion.
_GONE = BoundPod(job="", pod=-1, node="", gpus=(), share=0.0, request=ev.Resources(), started=float("nan"))


# What one pod asks for, and whether it takes part of one device (``is_shared``), worked out once
# per pod spec: binds ask it of every pod.
_PodRequest = tuple[ev.Resources, bool]


class _Job(NamedTuple):
    """A job's pods as the fleet reads its group; one is made for every group, and a frozen dataclass
    costs several times as much to build."""

    pods: tuple[_PodRequest, ...]
    duration: float | None
    workload_uid: str = ""
    runtime: str = runtimes.ANY


@dataclass(frozen=True, slots=True)
class _Adoption:
    """A pod handed over already running, waiting for the fleet's answer."""

    job: str
    pod: int
    node: str
    gpus: list[int]
    started_at: float
    pool: str
    """Where the request came from: the answer goes back there, even for a node the fleet lacks."""


def invalid_request(request: ev.Resources) -> str:
    """Why the allocator refuses to place a pod asking for ``request`` ('' when it does not)."""
    try:
        pod_kind(request.gpu, request.gpu_memory)
    except ValueError as exc:
        return str(exc)
    return ""


def is_shared(request: ev.Resources) -> bool:
    """Whether the pod takes part of one device rather than whole devices (False for an invalid request)."""
    try:
        return pod_kind(request.gpu, request.gpu_memory) in (FRACTION, MEMORY)
    except ValueError:
        return False


def device_share(request: ev.Resources, node: ev.NodeSpec) -> float | None:
    """The fraction of one device a shared pod needs on ``node``; ``None``
    when the node cannot say (a gpu_memory pod on a node without gpu_memory)."""
    kind = pod_kind(request.gpu, request.gpu_memory)
    got = share_of_device(kind, float(request.gpu), int(request.gpu_memory), int(node.resources.gpu_memory))
    return None if got == UNKNOWN_SHARE else got


class SimFleet:
    """The fleet's state, fed from the log, stepped by a clock."""

    def __init__(self) -> None:
        self._nodes: dict[str, _Node] = {}
        self._jobs: dict[str, _Job] = {}
        self._bound: dict[PodKey, BoundPod] = {}
        # Requested binds and evictions not acted on yet, in the order they were requested: an eviction
        # of a pod whose bind is still waiting (both arrived in one read) must follow that bind.
        # None: an eviction of the fleet's own making (its node or job went away).
        self._requests: dict[
            tuple[str, PodKey], ev.BindRequested | _Adoption | ev.EvictionRequested | None
        ] = {}
        # Adopted pods whose group the fleet has not read yet, by (job, submission).
        self._adoptions: dict[tuple[str, str], list[_Adoption]] = {}
        # (due time, pod, start) of every running pod with a duration: completions without a scan.
        self._due: list[tuple[float, PodKey, float]] = []
        self._agent_nodes: set[str] = set()
        # Pods that completed or failed, by job: they are done and never bound again (a move's pipelined
        # bind can still arrive for a pod that finished before its eviction did).
        self._finished: dict[str, set[int]] = {}
        # Pods whose completion the fleet confirmed and has not read back yet, with the node they ran on:
        # released already, they still ran there as far as the log goes.
        self._completing: dict[PodKey, str] = {}
        # The event types the fleet reads, each with its handler. `apply` finds the handler with one
        # lookup by exact type (trying isinstance case by case costs more than the handling itself);
        # other types, subclasses included, are resolved once from this list and remembered.
        self._readers: tuple[tuple[type, Callable[[Any], None]], ...] = (
            (ev.BindRequested, self._on_bind_requested),
            (ev.PodBound, self._on_pod_bound),
            (ev.PodGroupCreated, self._on_group_created),
            (ev.NodeRegistered, self._on_node),
            (ev.NodeUpdated, self._on_node),
            (ev.NodeRemoved, self._on_node_removed),
            (ev.PodGroupDeleted, self._on_group_deleted),
            (ev.EvictionRequested, self._on_eviction_requested),
            (ev.BindFailed, self._on_bind_failed),
            (ev.PodEvicted, self._on_pod_evicted),
            (ev.PodCompleted, self._on_pod_finished),
            (ev.PodFailed, self._on_pod_finished),
            (ev.AdoptPods, self._on_adopt),
        )
        self._reader_of: dict[type, Callable[[Any], None]] = dict(self._readers)

    # -- reading the log ---------------------------------------------------

    def apply(self, event: ev.Event) -> str | None:
        """Take one event from the log into account; unrelated events are ignored. A pod fact the fleet's
        state refutes (``muster.fact_admission``) changes nothing: why is returned, None otherwise."""
        kind = type(event)
        if kind in FACT_TYPES and (refused := refusal(self, event)) is not None:
            return refused
        reader = self._reader_of.get(kind)
        if reader is None:
            reader = self._reader_of[type(event)] = self._reader_for(type(event))
        reader(event)
        return None

    # -- what the fleet knows, as ``fact_admission`` asks it ---------------

    def pods_of(self, job: str) -> int | None:
        found = self._jobs.get(job)
        return None if found is None else len(found.pods)

    def placed_on(self, job: str, pod: int, node: str) -> str | None:
        # Said of the fact's node only, and only of a node the fleet runs: whether the pod runs there
        # (NOWHERE if not: a word that it ended there is refused). Where else it runs is not said: the
        # live binder's state runs ahead of the log on its own confirmations (a pod it evicted and bound
        # elsewhere in one step), so another node's eviction or failed bind may still be the log's truth;
        # ``_on_pod_evicted`` ignores such a word instead.
        key = (job, pod)
        running = self._bound.get(key)
        if running is not None and running.node == node:
            return node
        if node not in self._nodes:
            return None
        return node if self._completing.get(key) == node else NOWHERE

    def devices_of(self, node: str) -> int | None:
        found = self._nodes.get(node)
        if found is not None:
            return len(found.devices)
        return UNCHECKED if node in self._agent_nodes else None

    def _reader_for(self, kind: type) -> Callable[[Any], None]:
        return next((reader for base, reader in self._readers if issubclass(kind, base)), _ignore)

    def _on_bind_requested(self, event: ev.BindRequested) -> None:
        if event.node not in self._agent_nodes:  # `muster agent` answers for its own node's pods
            self._requests[(_BIND, (event.job, event.pod))] = event

    def _on_pod_bound(self, event: ev.PodBound) -> None:
        key = (event.job, event.pod)
        self._requests.pop((_BIND, key), None)
        if key in self._bound or event.node not in self._nodes:
            return  # mostly the fleet's own confirmation, read back: already running
        pod = self._request(event.job, event.pod)
        request, shared = pod if pod is not None else (ev.Resources(), False)
        node = self._nodes[event.node]
        share = device_share(request, node.spec) if shared else 0.0
        self._occupy(key, node, tuple(event.gpus), share or event.gpu_share, request, event.at)

    def _on_group_created(self, event: ev.PodGroupCreated) -> None:
        pods: list[_PodRequest] = []
        for spec in event.pods:
            pods += [(spec.resources, is_shared(spec.resources))] * spec.count
        self._jobs[event.name] = _Job(
            pods=tuple(pods), duration=event.duration, workload_uid=event.workload_uid, runtime=event.runtime
        )
        self._finished.pop(event.name, None)
        for adoption in self._adoptions.pop((event.name, event.workload_uid), ()):
            self._take_adoption(adoption)

    def _on_adopt(self, event: ev.AdoptPods) -> None:
        for pod in event.pods:
            adoption = _Adoption(pod.job, pod.pod, pod.node, list(pod.gpus), pod.started_at, event.pool)
            job = self._jobs.get(pod.job)
            if job is not None and job.workload_uid == event.workload_uid:
                self._take_adoption(adoption)
            else:
                self._adoptions.setdefault((pod.job, event.workload_uid), []).append(adoption)

    def _take_adoption(self, adoption: _Adoption) -> None:
        key = (adoption.job, adoption.pod)
        if key in self._bound or (_BIND, key) in self._requests:
            return  # the fleet already runs it, or is binding it: nothing to adopt
        self._requests[(_BIND, key)] = adoption

    def _on_node(self, event: ev.NodeRegistered | ev.NodeUpdated) -> None:
        if is_agent_node(event.node):
            self._agent_nodes.add(event.node.name)
        else:
            self._upsert_node(event.node)

    def _on_node_removed(self, event: ev.NodeRemoved) -> None:
        if event.name in self._nodes:
            self._nodes[event.name].removed = True
            for key in self._pods_on(event.name):
                self._requests[(_EVICT, key)] = None

    def _on_group_deleted(self, event: ev.PodGroupDeleted) -> None:
        name = event.name
        for key in sorted(key for key in self._bound if key[0] == name):
            self._requests[(_EVICT, key)] = None
        for request in [r for r in self._requests if r[0] == _BIND and r[1][0] == name]:
            del self._requests[request]

    def _on_eviction_requested(self, event: ev.EvictionRequested) -> None:
        if event.node not in self._agent_nodes:  # `muster agent` evicts its own node's pods
            self._requests[(_EVICT, (event.job, event.pod))] = event

    def _on_bind_failed(self, event: ev.BindFailed) -> None:
        self._requests.pop((_BIND, (event.job, event.pod)), None)

    def _on_pod_evicted(self, event: ev.PodEvicted | ev.PodCompleted | ev.PodFailed) -> bool:
        """Take the pod's end; whether it was taken. A word from another node than the one the fleet runs
        the pod on (before it moved there, or another node's agent), or than the one its eviction asks
        of, changes nothing."""
        key = (event.job, event.pod)
        if self._completing and self._completing.get(key) == event.node:
            del self._completing[key]  # the fleet's own completion, read back
        running = self._bound.get(key)
        if running is not None and running.node != event.node:
            return False
        asked = self._requests.get((_EVICT, key))
        if running is None and asked is not None and asked.node != event.node:
            return False
        self._requests.pop((_EVICT, key), None)
        self._release(key)
        return True

    def _on_pod_finished(self, event: ev.PodCompleted | ev.PodFailed) -> None:
        # Done for good, said by a node the fleet knows (its own completions are read back after ``step``
        # released the pod; agents answer for their nodes' pods), and not of a pod running elsewhere.
        known = event.node in self._nodes or event.node in self._agent_nodes
        if self._on_pod_evicted(event) and known:
            self._finished.setdefault(event.job, set()).add(event.pod)

    # -- acting ------------------------------------------------------------

    def step(self, clock: float) -> list[ev.Event]:
        """The confirmations due at ``clock``; the fleet's state moves with them."""
        out: list[ev.Event] = []
        # Acting on requests makes none, so all of them are taken at once.
        requests, self._requests = self._requests, {}
        for (kind, key), request in requests.items():
            if kind == _BIND:
                out += self._adopt(request) if type(request) is _Adoption else self._bind(request, clock)
                continue
            pod = self._bound.get(key)
            if pod is not None:
                self._release(key)
                out.append(ev.PodEvicted(job=key[0], pod=key[1], node=pod.node, pool=self._pool(pod.node)))
            elif request is not None and key[1] not in self._finished.get(key[0], ()):
                # Not running (its bind failed, or the allocator decided before reading that): evicted
                # all the same, so the eviction is answered and the pod is no longer held as releasing.
                out.append(ev.PodEvicted(job=key[0], pod=key[1], node=request.node, pool=request.pool))
        while self._due and self._due[0][0] <= clock + EPS:
            _, key, started = heapq.heappop(self._due)
            pod = self._bound.get(key)
            if pod is None or pod.started != started:
                continue  # evicted or re-bound since: this completion is void
            self._release(key)
            self._completing[key] = pod.node
            out.append(
                ev.PodCompleted(job=key[0], pod=key[1], node=pod.node, pool=self._pool(pod.node), at=clock)
            )
        return out

    def waiting_for_time(self) -> bool:
        """Whether some running pod will complete once enough time passes."""
        return self.next_due() is not None

    def next_due(self) -> float | None:
        """The earliest clock whose ``step`` confirms a completion (None: no running pod has a duration)."""
        while self._due and self._bound.get(self._due[0][1], _GONE).started != self._due[0][2]:
            heapq.heappop(self._due)
        # ``step`` confirms what is due within EPS of its clock
        return self._due[0][0] - EPS if self._due else None

    def bound(self) -> list[BoundPod]:
        """Every running pod, ordered by job and index."""
        return [self._bound[key] for key in sorted(self._bound)]

    def has_work(self) -> bool:
        """Whether binds or evictions wait for the next ``step``."""
        return bool(self._requests)

    # -- internals ---------------------------------------------------------

    def _upsert_node(self, spec: ev.NodeSpec) -> None:
        count = int(spec.resources.gpu)
        node = self._nodes.get(spec.name)
        if node is None:
            self._nodes[spec.name] = _Node(spec=spec, devices=[_Device() for _ in range(count)])
            return
        node.spec, node.removed = spec, False
        node.devices += [_Device() for _ in range(count - len(node.devices))]

    def _pods_on(self, node: str) -> list[PodKey]:
        return sorted(key for key, pod in self._bound.items() if pod.node == node)

    def _pool(self, node: str) -> str:
        return self._nodes[node].spec.pool if node in self._nodes else "default"

    def _request(self, job: str, pod: int) -> _PodRequest | None:
        spec = self._jobs.get(job)
        if spec is None or not 0 <= pod < len(spec.pods):
            return None
        return spec.pods[pod]

    def _bind(self, bind: ev.BindRequested, clock: float) -> list[ev.Event]:
        key = (bind.job, bind.pod)
        existing = self._bound.get(key)
        if existing is not None and existing.node == bind.node and list(existing.gpus) == bind.gpus:
            return []  # a repeated request for what already holds
        # Looked up once here for both the checks and the bind.
        node = self._nodes.get(bind.node)
        pod = self._request(bind.job, bind.pod)
        share = device_share(pod[0], node.spec) if node is not None and pod is not None and pod[1] else 0.0
        reason = self._refusal(bind, existing, node, pod, share)
        if reason:
            return [ev.BindFailed(job=bind.job, pod=bind.pod, node=bind.node, reason=reason, pool=bind.pool)]
        assert node is not None and pod is not None  # checked by _refusal
        return self._start(key, node, bind.gpus, share or 0.0, pod[0], clock)

    def _adopt(self, adoption: _Adoption) -> list[ev.Event]:
        """The answer to an adopted pod: it runs since it started, or why it cannot run there."""
        key = (adoption.job, adoption.pod)
        if key in self._bound:
            return []  # running already, and said so: a refusal would read as the end of that pod
        node = self._nodes.get(adoption.node)
        pod = self._request(adoption.job, adoption.pod)
        share = device_share(pod[0], node.spec) if node is not None and pod is not None and pod[1] else 0.0
        reason = self._refusal(adoption, None, node, pod, share, adopting=True)
        if not reason and node is not None and node.spec.pool != adoption.pool:
            # Said on another pool's subject, it would never reach the allocator waiting for it.
            reason = f"node {adoption.node} is in pool {node.spec.pool}, not {adoption.pool}"
        if reason:
            return [
                ev.BindFailed(
                    job=adoption.job, pod=adoption.pod, node=adoption.node, reason=reason, pool=adoption.pool
                )
            ]
        assert node is not None and pod is not None  # checked by _refusal
        return self._start(key, node, adoption.gpus, share or 0.0, pod[0], adoption.started_at)

    def _start(
        self, key: PodKey, node: _Node, gpus: list[int], share: float, request: ev.Resources, at: float
    ) -> list[ev.Event]:
        """Run pod ``key`` on ``node`` from clock ``at``; the fact that says so."""
        self._occupy(key, node, tuple(gpus), share, request, at)
        job, pod = key
        return [
            ev.PodBound(
                job=job,
                pod=pod,
                node=node.spec.name,
                gpus=list(gpus),
                gpu_share=share,
                pool=node.spec.pool,
                at=at,
            )
        ]

    def _refusal(
        self,
        bind: ev.BindRequested | _Adoption,
        existing: BoundPod | None,
        node: _Node | None,
        pod: _PodRequest | None,
        share: float | None,
        adopting: bool = False,
    ) -> str:
        """Why the bind (or adoption) cannot happen ('' when it can), given the bound pod, node, request
        and device share (of a shared pod) it names."""
        if existing is not None:
            return f"pod is already bound to node {existing.node}"
        if bind.pod in self._finished.get(bind.job, ()):
            return f"pod {bind.job}[{bind.pod}] has finished"
        if adopting and bind.node in self._agent_nodes:
            return f"node {bind.node} is run by muster agent, which reports its own pods"
        if node is None or node.removed:
            return f"no node {bind.node}"
        if node.spec.unschedulable and not adopting:
            return f"node {bind.node} is unschedulable"
        if pod is None:
            return f"no pod {bind.pod} in job {bind.job}"
        runtime = self._jobs[bind.job].runtime
        if not runtimes.can_run(node.spec, runtime):
            runs = " and ".join(runtimes.node_runtimes(node.spec))
            return f"node {bind.node} cannot run {runtime} pods (it runs {runs} pods)"
        request, shared = pod
        invalid = invalid_request(request)
        if invalid:
            return f"invalid pod request: {invalid}"
        cap = node.spec.resources
        if node.cpu + request.cpu > cap.cpu:
            return f"node {bind.node} has not enough cpu"
        if node.memory + request.memory > cap.memory:
            return f"node {bind.node} has not enough memory"
        if request.extended:
            for name, amount in sorted(request.extended.items()):
                if node.extended.get(name, 0) + amount > cap.extended.get(name, 0):
                    return f"node {bind.node} has not enough {name}"
        gpus = bind.gpus
        if not _distinct_devices(gpus, len(node.devices)):
            return f"node {bind.node} has no such devices {gpus}"
        if shared:
            if share is None:
                return f"node {bind.node} gives no gpu_memory per device"
            if len(gpus) != 1:
                return f"a shared-device pod holds exactly one device, got {gpus}"
            if node.devices[gpus[0]].used + share > 1 + EPS:
                return f"device {gpus[0]} of node {bind.node} has not enough room"
            return ""
        if len(gpus) != int(request.gpu):
            return f"the pod needs {int(request.gpu)} devices, got {gpus}"
        for g in gpus:
            device = node.devices[g]
            # `device.used > EPS`, without summing shares when a whole pod holds it or none do.
            if device.whole is not None or (device.shares and sum(device.shares.values()) > EPS):
                return f"device {g} of node {bind.node} is in use"
        return ""

    def _occupy(
        self, key: PodKey, node: _Node, gpus: tuple[int, ...], share: float, request: ev.Resources, at: float
    ) -> None:
        devices = node.devices
        for g in gpus:
            if g >= len(devices):
                continue
            if share > 0:
                devices[g].shares[key] = share
            else:
                devices[g].whole = key
        node.cpu += request.cpu
        node.memory += request.memory
        for name, amount in request.extended.items():
            node.extended[name] = node.extended.get(name, 0) + amount
        job = self._jobs.get(key[0])
        if job is not None and job.duration is not None:
            heapq.heappush(self._due, (at + job.duration, key, at))
        self._bound[key] = BoundPod(
            job=key[0], pod=key[1], node=node.spec.name, gpus=gpus, share=share, request=request, started=at
        )

    def _release(self, key: PodKey) -> None:
        pod = self._bound.pop(key, None)
        if pod is None:
            return
        node = self._nodes.get(pod.node)
        if node is None:
            return
        for g in pod.gpus:
            if g < len(node.devices):
                device = node.devices[g]
                device.shares.pop(key, None)
                if device.whole == key:
                    device.whole = None
        node.cpu -= pod.request.cpu
        node.memory -= pod.request.memory
        for name, amount in pod.request.extended.items():
            node.extended[name] = node.extended.get(name, 0) - amount


def _distinct_devices(gpus: list[int], count: int) -> bool:
    """Whether ``gpus`` names each device at most once, all among a node's ``count``."""
    if len(gpus) == 1:  # the common case: no set to build
        return 0 <= gpus[0] < count
    return len(set(gpus)) == len(gpus) and all(0 <= g < count for g in gpus)


def _ignore(event: ev.Event) -> None:
    """What the fleet does with events it has no use for."""
