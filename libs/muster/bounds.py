"""The largest values an event may carry, and the check every reader applies.

A value the types admit can still be poison: a priority past 2**31 that the
projector's ``integer`` column refuses (freezing the projection on that
message for good), a gang of 10**9 pods that every reader expands into a row
per pod, a node with 10**12 GPUs that the allocator gives an array slot per
device, a manifest nested so deep that the next recursive walk of it fails.
Each limit below says why it is where it is; ``check`` raises ``OutOfBounds``
naming the first field past one, as a JSON path (``$.events[0].pods[0].count``),
so the message is dead-lettered with its reason instead of crashing a reader.

Names follow Kubernetes' rules (``muster.names``): an event that introduces a
name (a job's ``PodGroupCreated``, a queue's ``UpsertQueue`` / ``QueueUpserted``,
a node's ``NodeRegistered`` / ``NodeUpdated``) is checked against the whole rule
of its kind; one that only refers to a name (``BindRequested.job``,
``PodGroupDeleted.name``...) against its length alone, the one comparison that
keeps an index row, a file name and a message bounded.

Scenario files become events through the same limits (``muster.scenario.convert``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from muster import events as ev
from muster.held_topologies import declared
from muster.names import JOB, MAX_NAME, NODE, POOL, QUEUE, TENANT, Rule, quoted
from muster.subgroups import SubGroupError, check_tree
from muster.topologies import TopologyError, shape_error

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
"""Postgres ``integer``: priorities, pod indices, cycles, epochs, pod counts are stored in one."""
INT64_MAX = 2**63 - 1
"""Postgres ``bigint``: stream sequences, CPU and memory."""

MAX_PODS_PER_GROUP = 65_536
"""Pods in one gang, over all its pod specs. Kubernetes supports 150,000 pods per cluster; a gang of
one pod per GPU on the largest clusters built stays below this, while every reader keeps a row per
pod, so a count of 10**9 would exhaust their memory instead of failing."""
MAX_NODE_GPUS = 4096
"""Devices on one node. Real nodes have 8-16, a 72-GPU rack served as one node is the largest; every
reader keeps an entry per device."""
MAX_GPU_MEMORY = 2**40
"""Bytes of one device (1 TiB; the largest today hold under 300 GB)."""
MAX_CPU_MILLIS = 10**8
"""Millicores of one node or pod (100,000 cores; the largest single machines have a few thousand)."""
MAX_MEMORY = 2**50
"""Bytes of one node or pod (1 PiB; the largest single machines have tens of TiB)."""
MAX_EXTENDED = 2**50
"""Units of one extended resource on one node or pod: whole counts such as ``rdma/ib``, or bytes for
storage-like ones. Sums over a node's pods stay far inside 64 bits."""
MAX_NESTING = 64
"""Levels of nesting in free-form documents (manifests, allocator settings). Kubernetes manifests
nest about 15 deep; readers walk them recursively, and Python stops at about 1,000 levels."""
MAX_UID = 253
"""Characters of a submission's or a cancel request's id: a key of the projection's workloads, like a name."""


class OutOfBounds(ValueError):
    """A value beyond what readers can hold; ``path`` names the field as a JSON path."""

    def __init__(self, path: str, message: str):
        super().__init__(f"{path}: {message}")
        self.path = path
        self.message = message


def check(events: Sequence[ev.Event], root: str = "$.events", *, nesting_bounded: bool = False) -> None:
    """Raise ``OutOfBounds`` for the first field of ``events`` past its limit.

    ``nesting_bounded``: the caller knows no free-form document of ``events`` nests past
    ``MAX_NESTING`` (a reader's admission can tell from the message's bytes), so none is walked.
    """
    checks = _SHALLOW_CHECKS if nesting_bounded else _CHECKS
    for i, event in enumerate(events):
        checker = checks.get(type(event))
        if checker is None:
            continue
        try:
            checker(event)
        except OutOfBounds as exc:
            raise OutOfBounds(f"{root}[{i}]{exc.path}", exc.message) from None


def check_pod_group(group: ev.PodGroupCreated, root: str = "$") -> None:
    """``check`` for one pod group; paths start at ``root``."""
    if pod_group_fits(group):
        return
    try:
        _pod_group(group)
    except OutOfBounds as exc:
        raise OutOfBounds(f"{root}{exc.path}", exc.message) from None


def check_node(node: ev.NodeSpec, root: str = "$") -> None:
    """``check`` for one node spec; paths start at ``root``."""
    try:
        _node_spec("", node)
    except OutOfBounds as exc:
        raise OutOfBounds(f"{root}{exc.path}", exc.message) from None


def check_queue(queue: ev.QueueSpec, root: str = "$") -> None:
    """``check`` for one queue spec; paths start at ``root``."""
    try:
        _queue_spec("", queue)
    except OutOfBounds as exc:
        raise OutOfBounds(f"{root}{exc.path}", exc.message) from None


# Every reader runs these on every event: each raises with a path below the event, and does
# little more than compare numbers when nothing is wrong.


def _range(path: str, value: int | float, low: int | float, high: int | float, unit: str = "") -> None:
    if low <= value <= high:
        return
    unit = f" {unit}" if unit else ""
    side, limit = ("above", high) if value > high else ("below", low)
    raise OutOfBounds(path, f"{value!r}{unit} is {side} the limit of {limit}{unit}")


def _int32(path: str, value: int, low: int = INT32_MIN) -> None:
    _range(path, value, low, INT32_MAX)


def _name(path: str, rule: Rule, value: str) -> None:
    """A name an event introduces: the whole rule of its kind."""
    if rule.fits(value):
        return
    raise OutOfBounds(path, rule.refusal(value) or "")


def _refers(path: str, value: str, longest: int = MAX_NAME) -> None:
    """A name an event only refers to: its length (whoever introduced it checked the rest)."""
    if len(value) > longest:
        raise OutOfBounds(path, f"{quoted(value)} is above the limit of {longest} characters")


_CONTAINERS = (dict, list)


def within_nesting(value: Any, levels: int) -> bool:
    """Whether ``value`` holds mappings and lists at most ``levels`` deep (``value`` itself is level 1)."""
    if isinstance(value, dict):
        children: Any = value.values()
    elif isinstance(value, list):
        children = value
    else:
        return True
    if levels < 1:
        return False
    # Recursive, yet never deeper than ``levels`` frames: it gives up where the limit is passed.
    # Every submission's manifests are walked twice (admission, grouping): no tuple per value.
    levels -= 1
    for child in children:
        if isinstance(child, _CONTAINERS) and not within_nesting(child, levels):
            return False
    return True


def _nesting(path: str, value: Any) -> None:
    if not within_nesting(value, MAX_NESTING):
        raise OutOfBounds(path, f"nested deeper than the limit of {MAX_NESTING} levels")


def _resources(path: str, r: ev.Resources, *, pod: bool) -> None:
    if r.gpu % 1:
        if not pod:
            raise OutOfBounds(f"{path}.gpu", f"{r.gpu!r} is not a whole number of devices")
        if r.gpu > 1:
            raise OutOfBounds(
                f"{path}.gpu", f"{r.gpu!r} is neither a share of one device (at most 1) nor whole devices"
            )
    _range(f"{path}.gpu", r.gpu, 0, MAX_NODE_GPUS, "devices")
    _range(f"{path}.gpu_memory", r.gpu_memory, 0, MAX_GPU_MEMORY, "bytes")
    _range(f"{path}.cpu", r.cpu, 0, MAX_CPU_MILLIS, "millicores")
    _range(f"{path}.memory", r.memory, 0, MAX_MEMORY, "bytes")
    for name, amount in r.extended.items():
        _range(f"{path}.extended[{name!r}]", amount, 0, MAX_EXTENDED)


def pod_group_fits(g: ev.PodGroupCreated) -> bool:
    """Whether ``check_pod_group`` passes: the same comparisons, without the paths only an error needs."""
    # Every reader checks every group, so this is one function with no calls per pod spec.
    total = 0
    for spec in g.pods:
        r = spec.resources
        gpu = r.gpu
        if not (
            0 <= spec.count <= MAX_PODS_PER_GROUP
            and 0 <= gpu <= MAX_NODE_GPUS
            and (gpu <= 1 or not gpu % 1)
            and 0 <= r.gpu_memory <= MAX_GPU_MEMORY
            and 0 <= r.cpu <= MAX_CPU_MILLIS
            and 0 <= r.memory <= MAX_MEMORY
            and (not r.extended or all(0 <= v <= MAX_EXTENDED for v in r.extended.values()))
        ):
            return False
        total += spec.count
    return (
        total <= MAX_PODS_PER_GROUP
        and INT32_MIN <= g.priority <= INT32_MAX
        and 0 <= g.min_available <= MAX_PODS_PER_GROUP
        and (not g.subgroups or all(0 <= s.min_available <= MAX_PODS_PER_GROUP for s in g.subgroups))
        and _tree_fits(g)
        and (g.topology is None or shape_error(g.topology) is None)
        and JOB.fits(g.name)
        and QUEUE.fits(g.queue)
        and POOL.fits(g.pool)
        and (not g.owner or TENANT.fits(g.owner))
        and len(g.workload_uid) <= MAX_UID
    )


def _pod_group(g: ev.PodGroupCreated) -> None:
    if not pod_group_fits(g):
        _pod_group_walk(g)


def _pod_group_walk(g: ev.PodGroupCreated) -> None:
    """Raise naming the first field of ``g`` past its limit."""
    _name(".name", JOB, g.name)
    _name(".queue", QUEUE, g.queue)
    _name(".pool", POOL, g.pool)
    if g.owner:
        _name(".owner", TENANT, g.owner)
    _refers(".workload_uid", g.workload_uid, MAX_UID)
    total = 0
    for j, spec in enumerate(g.pods):
        _range(f".pods[{j}].count", spec.count, 0, MAX_PODS_PER_GROUP)
        _resources(f".pods[{j}].resources", spec.resources, pod=True)
        total += spec.count
    if total > MAX_PODS_PER_GROUP:
        raise OutOfBounds(".pods", f"{total} pods in all is above the limit of {MAX_PODS_PER_GROUP}")
    _int32(".priority", g.priority)
    _range(".min_available", g.min_available, 0, MAX_PODS_PER_GROUP)
    for k, sub in enumerate(g.subgroups):
        _range(f".subgroups[{k}].min_available", sub.min_available, 0, MAX_PODS_PER_GROUP)
    try:
        check_tree(g.subgroups, g.min_subgroup, [p.subgroup for p in g.pods])
    except SubGroupError as exc:
        raise OutOfBounds(f".{exc.field}", exc.message) from None
    bad = shape_error(g.topology) if g.topology is not None else None
    if bad is not None:
        raise OutOfBounds(f".topology.{bad[0]}", bad[1])


def _tree_fits(g: ev.PodGroupCreated) -> bool:
    """Whether the group's sub-group tree is well formed (``muster.subgroups``)."""
    if not g.subgroups and g.min_subgroup is None:
        return True
    try:
        check_tree(g.subgroups, g.min_subgroup, [p.subgroup for p in g.pods])
    except SubGroupError:
        return False
    return True


def _node_spec(path: str, node: ev.NodeSpec) -> None:
    _name(f"{path}.name", NODE, node.name)
    _name(f"{path}.pool", POOL, node.pool)
    _resources(f"{path}.resources", node.resources, pod=False)


def _node(e: ev.NodeRegistered | ev.NodeUpdated) -> None:
    _node_spec(".node", e.node)


def _queue_spec(path: str, queue: ev.QueueSpec) -> None:
    _name(f"{path}.name", QUEUE, queue.name)
    if queue.parent:
        _name(f"{path}.parent", QUEUE, queue.parent)
    _int32(f"{path}.priority", queue.priority)
    _int32(f"{path}.order", queue.order)


def _queue(e: ev.UpsertQueue | ev.QueueUpserted) -> None:
    _queue_spec(".queue", e.queue)


def _devices(path: str, pod: int, gpus: list[int]) -> None:
    """A pod's index in its gang and the devices it holds on its node."""
    # The common case first, with no path built: at most a few devices, all in range.
    in_range = not gpus or (min(gpus) >= 0 and max(gpus) < MAX_NODE_GPUS)
    if 0 <= pod < MAX_PODS_PER_GROUP and len(gpus) <= MAX_NODE_GPUS and in_range:
        return
    _range(f"{path}.pod", pod, 0, MAX_PODS_PER_GROUP - 1)
    if len(gpus) > MAX_NODE_GPUS:
        raise OutOfBounds(f"{path}.gpus", f"{len(gpus)} devices is above the limit of {MAX_NODE_GPUS}")
    if gpus and not (min(gpus) >= 0 and max(gpus) < MAX_NODE_GPUS):
        for k, device in enumerate(gpus):
            _range(f"{path}.gpus[{k}]", device, 0, MAX_NODE_GPUS - 1)


def _placement_fits(e: ev.BindRequested | ev.PodBound) -> bool:
    """``_placement`` passes, in one call: every bind is checked by every reader, twice (decision, confirmation)."""
    gpus = e.gpus
    return (
        0 <= e.pod < MAX_PODS_PER_GROUP
        and 0 <= e.gpu_share <= 1
        and (not gpus or (len(gpus) <= MAX_NODE_GPUS and min(gpus) >= 0 and max(gpus) < MAX_NODE_GPUS))
        and len(e.job) <= MAX_NAME
        and len(e.node) <= MAX_NAME
    )


def _placement(e: ev.BindRequested | ev.PodBound) -> None:
    if _placement_fits(e):
        return
    _devices("", e.pod, e.gpus)
    if not 0 <= e.gpu_share <= 1:
        _range(".gpu_share", e.gpu_share, 0, 1)
    _job_and_node("", e)


def _adopt(e: ev.AdoptPods) -> None:
    _refers(".workload_uid", e.workload_uid, MAX_UID)
    for k, pod in enumerate(e.pods):
        _devices(f".pods[{k}]", pod.pod, pod.gpus)
        _job_and_node(f".pods[{k}]", pod)


def _job_and_node(path: str, e: Any) -> None:
    """The job and node a pod event refers to."""
    # Every pod event of every reader passes here: two comparisons when nothing is wrong.
    if len(e.job) <= MAX_NAME and len(e.node) <= MAX_NAME:
        return
    _refers(f"{path}.job", e.job)
    _refers(f"{path}.node", e.node)


def _cycle_and_epoch(
    e: ev.BindRequested | ev.EvictionRequested | ev.CycleCompleted | ev.PendingReasons,
) -> None:
    if 0 <= e.cycle <= INT32_MAX and 0 <= e.epoch <= INT32_MAX:
        return
    _int32(".cycle", e.cycle, 0)
    _int32(".epoch", e.epoch, 0)


def _bind(e: ev.BindRequested) -> None:
    if _placement_fits(e) and 0 <= e.cycle <= INT32_MAX and 0 <= e.epoch <= INT32_MAX:
        return
    _placement(e)
    _cycle_and_epoch(e)


def _evict(e: ev.EvictionRequested) -> None:
    _pod(e)
    _cycle_and_epoch(e)
    if e.for_job is not None:
        _refers(".for_job", e.for_job)


def _pod(e: ev.EvictionRequested | ev.BindFailed | ev.PodEvicted | ev.PodCompleted | ev.PodFailed) -> None:
    if 0 <= e.pod < MAX_PODS_PER_GROUP and len(e.job) <= MAX_NAME and len(e.node) <= MAX_NAME:
        return
    _range(".pod", e.pod, 0, MAX_PODS_PER_GROUP - 1)
    _job_and_node("", e)


def _failed(e: ev.PodFailed) -> None:
    _pod(e)
    if e.exit_code is not None:
        _int32(".exit_code", e.exit_code)  # the projection keeps it in an ``integer``


def _rejected(e: ev.BindRejected) -> None:
    _pod(e)
    _int32(".epoch", e.epoch, 0)
    _int32(".current_epoch", e.current_epoch, 0)


def _cycle(e: ev.CycleCompleted) -> None:
    _cycle_and_epoch(e)
    _range(".watermark", e.watermark, 0, INT64_MAX)
    _int32(".binds", e.binds, 0)
    _int32(".evictions", e.evictions, 0)


def _epoch(e: ev.LeaderElected) -> None:
    _int32(".epoch", e.epoch, 0)


def _configured(e: ev.AllocatorConfigured) -> None:
    _int32(".epoch", e.epoch, 0)
    _nesting(".config", e.config)


def _configured_epoch(e: ev.AllocatorConfigured) -> None:
    _int32(".epoch", e.epoch, 0)


def _workload(e: ev.WorkloadSubmitted) -> None:
    _workload_names(e)
    _nesting(".manifests", e.manifests)


def _workload_names(e: ev.WorkloadSubmitted) -> None:
    _refers(".uid", e.uid, MAX_UID)
    if e.queue:  # '' names no queue, as None does
        _name(".queue", QUEUE, e.queue)


def _answer(e: ev.WorkloadRejected | ev.CancelRequested | ev.CancelRefused) -> None:
    _refers(".uid", e.uid, MAX_UID)
    if not isinstance(e, ev.WorkloadRejected):
        _refers(".job", e.job)


def _answered(e: ev.RequestAnswered) -> None:
    _refers(".uid", e.uid, MAX_UID)
    for i, job in enumerate(e.jobs):
        _refers(f".jobs[{i}]", job)


def _named(e: Any) -> None:
    """An event about one job, queue or node, which it names (deleted, rejected, lost...)."""
    _refers(".name", e.name)


def _topology(e: ev.TopologyDeclared) -> None:
    """A declaration the podgrouper's fold can hold: a Topology KAI's CRD and webhook accept."""
    _refers(".name", e.name)
    try:
        declared(e)
    except TopologyError as exc:
        raise OutOfBounds(f".{exc.field}", exc.message) from None


def _letter(e: ev.DeadLettered) -> None:
    _range(".stream_seq", e.stream_seq, 0, INT64_MAX)


_CHECKS: dict[type, Callable[[Any], None]] = {
    ev.WorkloadSubmitted: _workload,
    ev.WorkloadRejected: _answer,
    ev.CancelRequested: _answer,
    ev.CancelRefused: _answer,
    ev.RequestAnswered: _answered,
    ev.PodGroupCreated: _pod_group,
    ev.PodGroupDeleted: _named,
    ev.UpsertQueue: _queue,
    ev.QueueUpserted: _queue,
    ev.DeleteQueue: _named,
    ev.QueueDeleted: _named,
    ev.QueueRejected: _named,
    ev.QueueStatus: _named,
    ev.NodeRegistered: _node,
    ev.NodeUpdated: _node,
    ev.NodeRemoved: _named,
    ev.NodeLost: _named,
    ev.AdoptPods: _adopt,
    ev.BindRequested: _bind,
    ev.EvictionRequested: _evict,
    ev.CycleCompleted: _cycle,
    ev.PendingReasons: _cycle_and_epoch,
    ev.AllocatorConfigured: _configured,
    ev.LeaderElected: _epoch,
    ev.PodBound: _placement,
    ev.BindFailed: _pod,
    ev.BindRejected: _rejected,
    ev.PodEvicted: _pod,
    ev.PodCompleted: _pod,
    ev.PodFailed: _failed,
    ev.DeadLettered: _letter,
    ev.TopologyDeclared: _topology,
}
# The same checks for events whose free-form documents are known to nest within MAX_NESTING.
_SHALLOW_CHECKS: dict[type, Callable[[Any], None]] = {
    **_CHECKS,
    ev.WorkloadSubmitted: _workload_names,
    ev.AllocatorConfigured: _configured_epoch,
}
