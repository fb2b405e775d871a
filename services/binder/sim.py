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

A pod is ``(job, index)``; the index runs over the job's pod specs
expanded in order.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field

from muster import events as ev
from muster.agent.plan import is_agent_node

_EPS = 1e-9
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


@dataclass(frozen=True)
class _Job:
    pods: tuple[ev.Resources, ...]
    duration: float | None


def is_shared(request: ev.Resources) -> bool:
    """Whether the pod takes part of one device rather than whole devices."""
    return 0 < request.gpu < 1 or (request.gpu == 0 and request.gpu_memory > 0)


def device_share(request: ev.Resources, node: ev.NodeSpec) -> float | None:
    """The fraction of one device a shared pod needs on ``node``; ``None``
    when the node cannot say (a gpu_memory pod on a node without gpu_memory)."""
    if request.gpu > 0:
        return request.gpu
    if node.resources.gpu_memory <= 0:
        return None
    return request.gpu_memory / node.resources.gpu_memory


class SimFleet:
    """The fleet's state, fed from the log, stepped by a clock."""

    def __init__(self) -> None:
        self._nodes: dict[str, _Node] = {}
        self._jobs: dict[str, _Job] = {}
        self._bound: dict[PodKey, BoundPod] = {}
        # Requested binds and evictions not acted on yet, in the order they were requested: an eviction
        # of a pod whose bind is still waiting (both arrived in one read) must follow that bind.
        # None: an eviction of the fleet's own making (its node or job went away).
        self._requests: dict[tuple[str, PodKey], ev.BindRequested | ev.EvictionRequested | None] = {}
        # (due time, pod, start) of every running pod with a duration: completions without a scan.
        self._due: list[tuple[float, PodKey, float]] = []
        self._agent_nodes: set[str] = set()
        # Pods that completed or failed, by job: they are done and never bound again (a move's pipelined
        # bind can still arrive for a pod that finished before its eviction did).
        self._finished: dict[str, set[int]] = {}

    # -- reading the log ---------------------------------------------------

    def apply(self, event: ev.Event) -> None:
        """Take one event from the log into account; unrelated events are ignored."""
        match event:
            # What every pod brings comes first: a match tries its cases in order.
            case ev.BindRequested():
                if event.node not in self._agent_nodes:  # `muster agent` answers for its own node's pods
                    self._requests[(_BIND, (event.job, event.pod))] = event
            case ev.PodBound():
                key = (event.job, event.pod)
                self._requests.pop((_BIND, key), None)
                if key not in self._bound and event.node in self._nodes:
                    request = self._request(event.job, event.pod) or ev.Resources()
                    node = self._nodes[event.node]
                    share = device_share(request, node.spec) if is_shared(request) else 0.0
                    self._occupy(key, node, tuple(event.gpus), share or event.gpu_share, request, event.at)
            case ev.PodGroupCreated():
                pods = tuple(spec.resources for spec in event.pods for _ in range(spec.count))
                self._jobs[event.name] = _Job(pods=pods, duration=event.duration)
                self._finished.pop(event.name, None)
            case ev.NodeRegistered(node=spec) | ev.NodeUpdated(node=spec) if is_agent_node(spec):
                self._agent_nodes.add(spec.name)
            case ev.EvictionRequested(node=node) if node in self._agent_nodes:
                pass
            case ev.NodeRegistered(node=spec) | ev.NodeUpdated(node=spec):
                self._upsert_node(spec)
            case ev.NodeRemoved(name=name):
                if name in self._nodes:
                    self._nodes[name].removed = True
                    for key in self._pods_on(name):
                        self._requests[(_EVICT, key)] = None
            case ev.PodGroupDeleted(name=name):
                for key in sorted(self._bound):
                    if key[0] == name:
                        self._requests[(_EVICT, key)] = None
                for request in [r for r in self._requests if r[0] == _BIND and r[1][0] == name]:
                    del self._requests[request]
            case ev.EvictionRequested():
                self._requests[(_EVICT, (event.job, event.pod))] = event
            case ev.BindFailed():
                self._requests.pop((_BIND, (event.job, event.pod)), None)
            case ev.PodEvicted() | ev.PodCompleted() | ev.PodFailed():
                key = (event.job, event.pod)
                self._requests.pop((_EVICT, key), None)
                self._release(key)
                if not isinstance(event, ev.PodEvicted):
                    self._finished.setdefault(event.job, set()).add(event.pod)
            case _:
                pass

    # -- acting ------------------------------------------------------------

    def step(self, clock: float) -> list[ev.Event]:
        """The confirmations due at ``clock``; the fleet's state moves with them."""
        out: list[ev.Event] = []
        for (kind, key), request in list(self._requests.items()):
            del self._requests[(kind, key)]
            if kind == _BIND:
                out += self._bind(request, clock)
                continue
            pod = self._bound.get(key)
            if pod is not None:
                self._release(key)
                out.append(ev.PodEvicted(job=key[0], pod=key[1], node=pod.node, pool=self._pool(pod.node)))
            elif request is not None and key[1] not in self._finished.get(key[0], ()):
                # Not running (its bind failed, or the allocator decided before reading that): evicted
                # all the same, so the eviction is answered and the pod is no longer held as releasing.
                out.append(ev.PodEvicted(job=key[0], pod=key[1], node=request.node, pool=request.pool))
        while self._due and self._due[0][0] <= clock + _EPS:
            _, key, started = heapq.heappop(self._due)
            pod = self._bound.get(key)
            if pod is None or pod.started != started:
                continue  # evicted or re-bound since: this completion is void
            self._release(key)
            out.append(
                ev.PodCompleted(job=key[0], pod=key[1], node=pod.node, pool=self._pool(pod.node), at=clock)
            )
        return out

    def waiting_for_time(self) -> bool:
        """Whether some running pod will complete once enough time passes."""
        while self._due and self._bound.get(self._due[0][1], _GONE).started != self._due[0][2]:
            heapq.heappop(self._due)
        return bool(self._due)

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

    def _request(self, job: str, pod: int) -> ev.Resources | None:
        spec = self._jobs.get(job)
        if spec is None or not 0 <= pod < len(spec.pods):
            return None
        return spec.pods[pod]

    def _bind(self, bind: ev.BindRequested, clock: float) -> list[ev.Event]:
        key = (bind.job, bind.pod)
        existing = self._bound.get(key)
        if existing is not None and existing.node == bind.node and list(existing.gpus) == bind.gpus:
            return []  # a repeated request for what already holds
        reason = self._refusal(bind, existing)
        if reason:
            return [ev.BindFailed(job=bind.job, pod=bind.pod, node=bind.node, reason=reason, pool=bind.pool)]
        node = self._nodes[bind.node]
        request = self._request(bind.job, bind.pod)
        assert request is not None  # checked by _refusal
        share = device_share(request, node.spec) if is_shared(request) else 0.0
        self._occupy(key, node, tuple(bind.gpus), share or 0.0, request, clock)
        return [
            ev.PodBound(
                job=bind.job,
                pod=bind.pod,
                node=bind.node,
                gpus=list(bind.gpus),
                gpu_share=share or 0.0,
                pool=node.spec.pool,
                at=clock,
            )
        ]

    def _refusal(self, bind: ev.BindRequested, existing: BoundPod | None) -> str:
        """Why the bind cannot happen ('' when it can)."""
        if existing is not None:
            return f"pod is already bound to node {existing.node}"
        if bind.pod in self._finished.get(bind.job, ()):
            return f"pod {bind.job}[{bind.pod}] has finished"
        node = self._nodes.get(bind.node)
        if node is None or node.removed:
            return f"no node {bind.node}"
        if node.spec.unschedulable:
            return f"node {bind.node} is unschedulable"
        request = self._request(bind.job, bind.pod)
        if request is None:
            return f"no pod {bind.pod} in job {bind.job}"
        cap = node.spec.resources
        if node.cpu + request.cpu > cap.cpu:
            return f"node {bind.node} has not enough cpu"
        if node.memory + request.memory > cap.memory:
            return f"node {bind.node} has not enough memory"
        for name, amount in sorted(request.extended.items()):
            if node.extended.get(name, 0) + amount > cap.extended.get(name, 0):
                return f"node {bind.node} has not enough {name}"
        gpus = bind.gpus
        if len(set(gpus)) != len(gpus) or any(not 0 <= g < len(node.devices) for g in gpus):
            return f"node {bind.node} has no such devices {gpus}"
        if is_shared(request):
            share = device_share(request, node.spec)
            if share is None:
                return f"node {bind.node} gives no gpu_memory per device"
            if len(gpus) != 1:
                return f"a shared-device pod holds exactly one device, got {gpus}"
            if node.devices[gpus[0]].used + share > 1 + _EPS:
                return f"device {gpus[0]} of node {bind.node} has not enough room"
            return ""
        if len(gpus) != int(request.gpu):
            return f"the pod needs {int(request.gpu)} devices, got {gpus}"
        for g in gpus:
            if node.devices[g].used > _EPS:
                return f"device {g} of node {bind.node} is in use"
        return ""

    def _occupy(
        self, key: PodKey, node: _Node, gpus: tuple[int, ...], share: float, request: ev.Resources, at: float
    ) -> None:
        for g in gpus:
            if g >= len(node.devices):
                continue
            if share > 0:
                node.devices[g].shares[key] = share
            else:
                node.devices[g].whole = key
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
