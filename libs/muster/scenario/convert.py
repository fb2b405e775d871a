"""Scenario model -> muster events, in base units.

Scenario files speak in user units (cpu in cores, memory with suffixes);
events speak in base units (millicores, bytes, devices). Every parser here
takes the field path so that a bad value is reported where it was written.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from muster import bounds, mig, pod_constraints, runtimes
from muster import events as ev
from muster.bounds import MAX_NODE_GPUS
from muster.quantity import QuantityError, byte_count, cpu_millis, gpu_devices, parse_quantity, whole_count
from muster.scenario import model as m
from muster.scenario.errors import ScenarioError, from_data, join
from muster.topologies import Level, TopologyDef, TopologyError, check_topology, constraint

if TYPE_CHECKING:
    from muster.scheduler.config import AllocatorConfig

_MEMORY_KINDS = ("memory", "gpu_memory")


def _parse(parser: Any, value: object, path: str) -> Any:
    try:
        return parser(value)
    except QuantityError as exc:
        raise ScenarioError(path, str(exc)) from None


def _under(path: str, exc: ScenarioError) -> ScenarioError:
    """``exc``, whose path is relative to the field at ``path``, rooted at ``path``."""
    return ScenarioError(join(path, exc.path), exc.message)


def _resources(raw: dict[str, m.Quantity], gpu_parser: Any) -> ev.Resources:
    """``raw`` in base units; a bad value raises ``ScenarioError`` naming its key
    alone, so that callers build their field path only when there is an error."""
    gpu, gpu_memory, cpu, memory = 0.0, 0, 0, 0
    extended: dict[str, int] = {}
    for key in sorted(raw):
        value = raw[key]
        try:
            if key == "gpu":
                gpu = gpu_parser(value)
            elif key == "gpu_memory":
                gpu_memory = byte_count(value)
            elif key == "cpu":
                cpu = cpu_millis(value)
            elif key == "memory":
                memory = byte_count(value)
            else:
                extended[key] = whole_count(value)
        except QuantityError as exc:
            raise ScenarioError(key, str(exc)) from None
    return ev.Resources(gpu=gpu, gpu_memory=gpu_memory, cpu=cpu, memory=memory, extended=extended)


def _pod_request(raw: dict[str, m.Quantity]) -> ev.Resources:
    """``pod_resources`` with errors named relative to the resources mapping."""
    res = _resources(raw, gpu_devices)
    if res.gpu and res.gpu_memory:
        raise ScenarioError("gpu_memory", "a pod asks for either gpu or gpu_memory, not both")
    try:
        mig.check_request(res.gpu, res.gpu_memory, res.extended)
    except mig.MigError as exc:
        raise ScenarioError(exc.name, exc.message) from None
    return res


def pod_resources(raw: dict[str, m.Quantity], path: str = "resources") -> ev.Resources:
    """A pod's request: ``gpu`` a fraction below 1 or whole devices, or
    ``gpu_memory`` of one shared device (not both), or MIG instances
    (``nvidia.com/mig-<g>g.<m>gb: n``, each counting g GPUs against quota)."""
    try:
        return _pod_request(raw)
    except ScenarioError as exc:
        raise _under(path, exc) from None


def node_resources(raw: dict[str, m.Quantity], path: str = "resources") -> ev.Resources:
    """A node's capacity: whole GPU devices, ``gpu_memory`` per device, MIG instances per profile."""
    try:
        res = _resources(raw, lambda value: float(whole_count(value)))
        mig.check(res.extended)
    except ScenarioError as exc:
        raise _under(path, exc) from None
    except mig.MigError as exc:
        raise ScenarioError(join(path, exc.name), exc.message) from None
    if res.gpu > MAX_NODE_GPUS:
        raise ScenarioError(join(path, "gpu"), f"at most {MAX_NODE_GPUS} devices per node, got {res.gpu:g}")
    return res


def _queue_amount(resource: str, value: m.Quantity, path: str) -> float:
    """A quota or limit in base units; -1 stays -1 (unlimited / none)."""
    try:
        if parse_quantity(value) == Decimal(-1):
            return -1.0
    except QuantityError as exc:
        raise ScenarioError(path, str(exc)) from None
    if resource == "gpu":
        amount = _parse(parse_quantity, value, path)
        if amount < 0:
            raise ScenarioError(path, f"must be -1 or not negative, got {value!r}")
        return float(amount)
    if resource == "cpu":
        return float(_parse(cpu_millis, value, path))
    if resource in _MEMORY_KINDS:
        return float(_parse(byte_count, value, path))
    return float(_parse(whole_count, value, path))


def queue_resources(raw: dict[str, m.QueueResource], path: str = "resources") -> dict[str, ev.QueueResource]:
    """Per-resource quota, weight and limit with the format's defaults
    (gpu: quota 0; anything else: quota -1; weight 1; limit -1)."""
    out: dict[str, ev.QueueResource] = {}
    for resource in sorted(set(raw) | {"gpu"}):
        spec = raw.get(resource, m.QueueResource())
        where = join(path, resource)
        quota = -1.0 if resource != "gpu" else 0.0
        if spec.quota is not None:
            quota = _queue_amount(resource, spec.quota, join(where, "quota"))
        limit = -1.0 if spec.limit is None else _queue_amount(resource, spec.limit, join(where, "limit"))
        weight = 1.0 if spec.over_quota_weight is None else spec.over_quota_weight
        if weight < 0:
            raise ScenarioError(join(where, "over_quota_weight"), f"must not be negative, got {weight!r}")
        out[resource] = ev.QueueResource(quota=quota, over_quota_weight=float(weight), limit=limit)
    return out


def queue_spec(queue: m.Queue, order: int, path: str = "queue") -> ev.QueueSpec:
    """One queue as the events carry it; ``order`` is its place in the file."""
    min_runtime = None
    if queue.min_runtime is not None:
        for key in ("preempt", "reclaim"):
            value = getattr(queue.min_runtime, key)
            if value is not None and not value >= 0:  # NaN too
                raise ScenarioError(
                    join(join(path, "min_runtime"), key), "must be a number of seconds, not negative"
                )
        min_runtime = ev.MinRuntime(preempt=queue.min_runtime.preempt, reclaim=queue.min_runtime.reclaim)
    if not queue.name:
        raise ScenarioError(join(path, "name"), "must not be empty")
    if queue.parent == queue.name:
        raise ScenarioError(join(path, "parent"), f"queue {queue.name!r} cannot be its own parent")
    spec = ev.QueueSpec(
        name=queue.name,
        parent=queue.parent,
        priority=queue.priority,
        resources=queue_resources(queue.resources, join(path, "resources")),
        min_runtime=min_runtime,
        order=order,
    )
    _within_bounds(bounds.check_queue, spec, path)
    return spec


def expected_amount(resource: str, value: m.Quantity, path: str) -> float:
    """A number in ``expect`` in simulate's output units: gpu devices, cpu
    cores, memory bytes."""
    if resource in _MEMORY_KINDS:
        return float(_parse(byte_count, value, path))
    return float(_parse(parse_quantity, value, path))


def job_pods(job: m.Job, path: str = "job") -> list[ev.PodSpec]:
    """The job's pod specs in base units, checked."""
    if not job.pods:
        raise ScenarioError(join(path, "pods"), "a job needs at least one pod")
    specs = []
    for i, pod in enumerate(job.pods):
        # Every submitted job passes here: its pods' field paths are built only for an error.
        try:
            specs.append(_pod_spec(pod))
        except ScenarioError as exc:
            raise _under(join(join(path, "pods"), i), exc) from None
    return specs


def _pod_spec(pod: m.Pod) -> ev.PodSpec:
    """One pod entry in base units; errors are named relative to the entry."""
    if pod.count < 1:
        raise ScenarioError("count", f"must be at least 1, got {pod.count}")
    try:
        resources = _pod_request(pod.resources)
    except ScenarioError as exc:
        raise _under("resources", exc) from None
    try:
        constraints = pod_constraints.affinity_constraints(pod.tolerations, pod.affinity)
    except pod_constraints.ConstraintError as exc:
        raise ScenarioError(exc.path, exc.message) from None
    return ev.PodSpec(
        role=pod.role,
        count=pod.count,
        resources=resources,
        node_selector=dict(pod.node_selector),
        gpu_models=list(pod.gpu_models),
        **(_NO_FIELDS if constraints is pod_constraints.NONE else constraints.pod_spec_fields()),
        labels=dict(pod.labels),
        subgroup=pod.subgroup,
    )


_NO_FIELDS: dict[str, list] = {}
"""``PodSpec`` fields of ``pod_constraints.NONE``: all at their defaults."""


def expand(pods: list[ev.PodSpec]) -> list[ev.PodSpec]:
    """One entry per pod, in pod-index order (each spec repeated ``count`` times)."""
    return [spec for spec in pods for _ in range(spec.count)]


def job_to_podgroup(
    job: m.Job | dict[str, Any],
    *,
    path: str = "job",
    kind: str = "Job",
    workload_uid: str = "",
    topologies: Mapping[str, TopologyDef] | None = None,
) -> ev.PodGroupCreated:
    """One scenario job (a model or the raw mapping from a file) as the gang
    the allocator schedules, part of the workload ``workload_uid`` if given;
    ``topologies`` are the ones its constraint may name.
    Raises ``ScenarioError`` naming the bad field."""
    if not isinstance(job, m.Job):
        job = from_data(job, m.Job, path)
    if not job.name:
        raise ScenarioError(join(path, "name"), "must not be empty")
    pods = job_pods(job, path)
    total = pods[0].count if len(pods) == 1 else sum(spec.count for spec in pods)
    min_available = total if job.min_available is None else job.min_available
    if not 0 <= min_available <= total:
        # 0: no gang, every pod placed as it fits (KAI's minMember 0, kai-semantics.md §11)
        raise ScenarioError(join(path, "min_available"), f"must be between 0 and the job's {total} pods")
    if job.priority is not None:
        priority = job.priority
    elif job.priority_class is not None:
        priority = m.PRIORITY_CLASSES[job.priority_class]
    else:
        priority = m.DEFAULT_PRIORITY
    priority_class = job.priority_class if job.priority_class or job.priority is not None else "train"
    preemptible = priority < 100 if job.preemptible is None else job.preemptible
    if job.duration is not None and job.duration < 0:
        raise ScenarioError(join(path, "duration"), "must not be negative")
    if job.min_runtime is not None and not job.min_runtime >= 0:  # NaN too
        raise ScenarioError(join(path, "min_runtime"), "must be a number of seconds, not negative")
    if job.preemption_delay is not None and not 0 <= job.preemption_delay < math.inf:
        raise ScenarioError(join(path, "preemption_delay"), "must be a number of seconds, not negative")
    if job.stale_gang_grace is not None and not math.isfinite(job.stale_gang_grace):
        raise ScenarioError(join(path, "stale_gang_grace"), "must be a number of seconds")
    topology = _topology(job.topology, path, topologies)
    group = ev.PodGroupCreated(
        name=job.name,
        queue=job.queue,
        kind=kind,
        pool=job.pool,
        priority_class=priority_class,
        priority=priority,
        preemptible=preemptible,
        min_available=min_available,
        submitted_at=job.submitted_at,
        pods=pods,
        subgroups=_subgroups(job, path, topologies),
        min_subgroup=job.min_subgroup,
        topology=topology,
        min_runtime=job.min_runtime,
        duration=job.duration,
        workload_uid=workload_uid,
        runtime=job.runtime,
        preemption_delay=job.preemption_delay,
        stale_gang_grace=job.stale_gang_grace,
    )
    _within_bounds(bounds.check_pod_group, group, path)
    return group


def _topology(
    given: m.Topology | None, path: str, topologies: Mapping[str, TopologyDef] | None
) -> ev.Topology | None:
    """A constraint (the job's or a sub-group's, at ``path``), its levels resolved against the topology it
    names (``muster.topologies``)."""
    if given is None:
        return None
    at = join(path, "topology")
    if not given.name and not given.required and not given.preferred:
        raise ScenarioError(at, "give a required or a preferred label")
    try:
        return constraint(
            topologies,
            given.name,
            given.required,
            given.preferred,
            fields=(join(at, "name"), join(at, "required"), join(at, "preferred")),
        )
    except TopologyError as exc:
        raise ScenarioError(exc.field, exc.message) from None


def topology_defs(raw: list[m.TopologyResource], path: str = "topologies") -> dict[str, TopologyDef]:
    """A scenario's ``topologies``, each checked as KAI checks a Topology, by name."""
    out: dict[str, TopologyDef] = {}
    for k, topo in enumerate(raw):
        at = join(path, k)
        if topo.name in out:
            raise ScenarioError(join(at, "name"), f"{topo.name!r} is already the name of another topology")
        try:
            out[topo.name] = check_topology(
                topo.name, [Level(lv.nodeLabel, lv.alias) for lv in topo.levels], at
            )
        except TopologyError as exc:
            raise ScenarioError(exc.field, exc.message) from None
    return out


def _subgroups(job: m.Job, path: str, topologies: Mapping[str, TopologyDef] | None) -> list[ev.SubGroup]:
    """The job's sub-group tree as events spell it, each sub-group's own constraint resolved as the job's
    is; the tree itself is checked with the group (``muster.subgroups`` through ``muster.bounds``)."""
    if not job.subgroups:
        return []
    parents = {sub.parent for sub in job.subgroups}
    out = []
    for k, sub in enumerate(job.subgroups):
        at = join(join(path, "subgroups"), k)
        if sub.min_available is not None and sub.min_subgroup is not None:
            raise ScenarioError(at, "give min_available (a leaf) or min_subgroup (a parent), not both")
        if sub.name not in parents and sub.min_available is None:
            raise ScenarioError(join(at, "min_available"), "a leaf sub-group needs min_available")
        out.append(
            ev.SubGroup(
                name=sub.name,
                parent=sub.parent,
                min_available=sub.min_available or 0,
                min_subgroup=sub.min_subgroup,
                topology=_topology(sub.topology, at, topologies),
            )
        )
    return out


def _within_bounds(check: Any, value: Any, path: str) -> None:
    """The limits every reader of the bus applies (``muster.bounds``), as a ``ScenarioError``."""
    try:
        check(value, root=path)
    except bounds.OutOfBounds as exc:
        raise ScenarioError(exc.path, exc.message) from None


def node_spec(node: m.Node, path: str = "node") -> ev.NodeSpec:
    if not node.name:
        raise ScenarioError(join(path, "name"), "must not be empty")
    if node.runtimes is not None and not node.runtimes:
        raise ScenarioError(join(path, "runtimes"), "name at least one of command, image, simulated")
    spec = ev.NodeSpec(
        name=node.name,
        pool=node.pool,
        labels=dict(node.labels),
        resources=node_resources(node.resources, join(path, "resources")),
        gpu_model=node.gpu_model,
        unschedulable=node.unschedulable,
        runtimes=list(node.runtimes) if node.runtimes is not None else [runtimes.SIMULATED],
        taints=_taints(node.taints, join(path, "taints")),
    )
    _within_bounds(bounds.check_node, spec, path)
    return spec


def _taints(raw: list[Any], path: str) -> list[ev.Taint]:
    try:
        return pod_constraints.taints(raw, path)
    except pod_constraints.ConstraintError as exc:
        raise ScenarioError(exc.path, exc.message) from None


def gpu_share(request: ev.Resources, node: ev.NodeSpec) -> float:
    """The fraction of one device a shared-device pod holds on ``node``; 0 for whole devices."""
    if 0 < request.gpu < 1:
        return request.gpu
    if request.gpu_memory and node.resources.gpu_memory:
        return min(1.0, request.gpu_memory / node.resources.gpu_memory)
    return 0.0


def running_pods(job: m.Job, start: float = 0.0) -> list[ev.AdoptedPod]:
    """The job's pods the file says already run, in pod order; ``start`` is the clock at t=0."""
    return [
        ev.AdoptedPod(
            job=job.name, pod=index, node=entry.node, gpus=list(entry.gpus), started_at=start + job.started_at
        )
        for index, entry in enumerate(job.running)
    ]


def running_events(
    scenario: m.Scenario, nodes: dict[str, ev.NodeSpec], *, start: float = 0.0, workload_uid: str = ""
) -> list[ev.AdoptPods]:
    """The scenario's running pods handed to the fleet, one request per pool (in pool order), for the
    groups made from submission ``workload_uid``; ``start`` is the clock at the scenario's t=0.

    Pods already running are facts of the fleet, not decisions: the fleet answers each with PodBound
    (``at`` = start + started_at), as it would report pods it found running on its nodes."""
    by_pool: dict[str, list[ev.AdoptedPod]] = {}
    for job in scenario.jobs:
        for pod in running_pods(job, start):
            by_pool.setdefault(nodes[pod.node].pool, []).append(pod)
    return [
        ev.AdoptPods(pool=pool, workload_uid=workload_uid, pods=pods)
        for pool, pods in sorted(by_pool.items())
    ]


def scenario_events(scenario: m.Scenario) -> list[ev.Event]:
    """The scenario as the ordered events a live system would see: nodes, the pods already running on
    them (handed to the fleet), queues (in file order), then pod groups."""
    nodes = {n.name: node_spec(n, join("nodes", i)) for i, n in enumerate(scenario.nodes)}
    out: list[ev.Event] = [ev.NodeRegistered(node=spec) for spec in nodes.values()]
    out += running_events(scenario, nodes)
    out += [
        ev.QueueUpserted(queue=queue_spec(q, i, join("queues", i))) for i, q in enumerate(scenario.queues)
    ]
    topologies = topology_defs(scenario.topologies)
    out += [
        job_to_podgroup(job, path=join("jobs", i), topologies=topologies)
        for i, job in enumerate(scenario.jobs)
    ]
    return out


def allocator_config(scenario: m.Scenario) -> AllocatorConfig:
    """The allocator's configuration for this scenario. Under gpu spread
    placement consolidation is dropped, as the spec requires."""
    from muster.scheduler.config import AllocatorConfig, FairnessConfig

    cfg = scenario.config
    actions = tuple(a for a in cfg.actions if not (a == "consolidate" and cfg.placement.gpu == "spread"))
    fairness = None
    if cfg.fairness is not None:
        f = cfg.fairness
        fairness = FairnessConfig(
            usage_window=f.usage_window,
            half_life=f.half_life,
            k=f.k,
            window_type=f.window_type,
            tumbling_window_start=f.tumbling_window_start,
            cron_string=f.cron_string,
        )
    return AllocatorConfig(
        placement_gpu=cfg.placement.gpu,
        placement_cpu=cfg.placement.cpu,
        actions=actions,
        reclaimer_utilization_multiplier=cfg.reclaimer_utilization_multiplier,
        stale_gang_grace=cfg.stale_gang_grace,
        fairness=fairness,
        reclaim_min_runtime_resolution=cfg.reclaim_min_runtime_resolution,
        default_preempt_min_runtime=cfg.default_preempt_min_runtime,
        default_reclaim_min_runtime=cfg.default_reclaim_min_runtime,
    )
