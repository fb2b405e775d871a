"""Kubeflow training-operator v1 jobs: TFJob, PyTorchJob, XGBoostJob, JAXJob, MPIJob
(a gang of every replica), and PaddleJob (which KAI leaves to its default rule).

min_available is the sum of ``replicas`` over the replica map, replaced by
``runPolicy.schedulingPolicy.minAvailable`` when set. PyTorchJob also honours
``elasticPolicy.minReplicas`` (the whole gang's minimum, below schedulingPolicy)
and has ``master``/``worker`` sub-groups, the worker one split into segments by
``kai.scheduler/segment-size``. An MPIJob with ``launcherCreationPolicy:
WaitForWorkersReady`` starts without its launcher in the gang.

A missing ``replicas`` reads as 1, as the training operator's defaulting fills
it before KAI ever sees the object; an explicit value must be positive.
"""

from __future__ import annotations

import math
from typing import Any

from muster.events import SubGroup
from muster.grouping import controller_labels
from muster.grouping.errors import ManifestError
from muster.grouping.fields import as_map, get_int, get_map, get_str, join, require_map
from muster.grouping.groupers.default import shared_group
from muster.grouping.limits import check_count
from muster.grouping.metadata import segment_constraint
from muster.grouping.model import AnnotatedConstraint, Context, Draft, Meta, PodTemplate, pod_template

REPLICA_MAPS = {
    "TFJob": "tfReplicaSpecs",
    "PyTorchJob": "pytorchReplicaSpecs",
    "XGBoostJob": "xgbReplicaSpecs",
    "JAXJob": "jaxReplicaSpecs",
    "MPIJob": "mpiReplicaSpecs",
    "PaddleJob": "paddleReplicaSpecs",
}
REQUIRED_REPLICAS = {
    "XGBoostJob": ("Master", "Worker"),
    "JAXJob": ("Worker",),
    "MPIJob": ("Launcher", "Worker"),
}
SEGMENT_SIZE = "kai.scheduler/segment-size"
MAX_SEGMENTS = 10_000
"""KAI refuses to group a job split into more segments than this (v0.17)."""
# Coordinators first, then workers: a stable order for the pods of a group.
_ROLE_ORDER = {"Master": 0, "Chief": 0, "Launcher": 0, "PS": 1, "Worker": 2}


def replica_specs(obj: dict[str, Any], path: str, meta: Meta) -> list[tuple[str, int, PodTemplate]]:
    """(replica type, replicas, pod template) per entry of the kind's replica map, its pods labelled as
    the kind's operator labels them."""
    spath = join(path, "spec")
    kind = meta.kind
    controller = controller_labels.kubeflow_controller(kind, meta.api_version)
    spec = require_map(obj, "spec", path)
    key = REPLICA_MAPS[kind]
    mpath = join(spath, key)
    replica_map = require_map(spec, key, spath)
    if not replica_map:
        raise ManifestError(mpath, "needs at least one replica type")
    for required in REQUIRED_REPLICAS.get(kind, ()):
        if required not in replica_map:
            raise ManifestError(join(mpath, required), f"a {kind} needs a {required} replica spec")
    worker_zero_master = kind == "TFJob" and controller_labels.tfjob_worker_zero_is_master(
        map(str, replica_map)
    )
    out = []
    for rtype in sorted(replica_map, key=lambda r: (_ROLE_ORDER.get(str(r), 3), str(r))):
        epath = join(mpath, str(rtype))
        entry = as_map(replica_map[rtype], epath)
        replicas = get_int(entry, "replicas", epath, 1)
        assert replicas is not None
        if replicas <= 0:
            raise ManifestError(join(epath, "replicas"), f"must be positive, got {replicas}")
        check_count(replicas, join(epath, "replicas"))
        template = pod_template(
            require_map(entry, "template", epath),
            join(epath, "template"),
            role=str(rtype).lower(),
            count=replicas,
            controller_labels=controller_labels.synthesised(controller, name=meta.name, role=str(rtype)),
        )
        if worker_zero_master and rtype == "Worker":
            out += _worker_zero_apart(template)
        else:
            out.append((str(rtype), replicas, template))
    check_count(sum(replicas for _, replicas, _ in out), mpath)
    return out


def _worker_zero_apart(workers: PodTemplate) -> list[tuple[str, int, PodTemplate]]:
    """A TFJob's workers when worker 0 is its master: worker 0 a PodSpec entry of its own carrying
    ``job-role: master`` (its template's own labels still win), the rest another."""
    pod = workers.pod
    labels = {**pod.labels, **controller_labels.master_role_labels(), **workers.labels}
    out = [("Worker", 1, workers.with_pod(count=1, labels=labels))]
    if pod.count > 1:
        out.append(("Worker", pod.count - 1, workers.with_pod(count=pod.count - 1)))
    return out


def _scheduling_min(obj: dict[str, Any], path: str) -> int | None:
    spath = join(path, "spec")
    rpath = join(spath, "runPolicy")
    run_policy = get_map(get_map(obj, "spec", path), "runPolicy", spath)
    ppath = join(rpath, "schedulingPolicy")
    policy = get_map(run_policy, "schedulingPolicy", rpath)
    value = get_int(policy, "minAvailable", ppath)
    if value is not None and value < 0:
        raise ManifestError(join(ppath, "minAvailable"), f"must not be negative, got {value}")
    return None if value is None else check_count(value, join(ppath, "minAvailable"))


def _draft(
    meta: Meta,
    pods: list[PodTemplate],
    min_available: int,
    subgroups=(),
    subgroup_topologies: tuple[tuple[str, AnnotatedConstraint], ...] = (),
) -> list[Draft]:
    return [
        Draft(
            name=meta.name,
            kind=meta.kind,
            top=meta,
            owners=(meta,),
            pods=tuple(pods),
            min_available=min_available,
            subgroups=tuple(subgroups),
            subgroup_topologies=subgroup_topologies,
        )
    ]


def group_distributed(obj: dict[str, Any], path: str, meta: Meta, ctx: Context) -> list[Draft]:
    """TFJob, XGBoostJob, JAXJob: every replica is required."""
    specs = replica_specs(obj, path, meta)
    minimum = _scheduling_min(obj, path)
    total = sum(replicas for _, replicas, _ in specs)
    return _draft(meta, [t for _, _, t in specs], total if minimum is None else minimum)


def group_mpi(obj: dict[str, Any], path: str, meta: Meta, ctx: Context) -> list[Draft]:
    specs = replica_specs(obj, path, meta)
    minimum = _scheduling_min(obj, path)
    min_available = sum(replicas for _, replicas, _ in specs) if minimum is None else minimum
    spath = join(path, "spec")
    if get_str(obj["spec"], "launcherCreationPolicy", spath) == "WaitForWorkersReady":
        # Submitted, no launcher pod exists yet: KAI leaves it out of the gang until it does.
        launchers = sum(replicas for rtype, replicas, _ in specs if rtype == "Launcher")
        min_available = max(0, min_available - launchers)
    return _draft(meta, [t for _, _, t in specs], min_available)


def _segments(
    worker: PodTemplate, path: str, minimum: int, meta: Meta
) -> tuple[list[SubGroup], list[PodTemplate], tuple[tuple[str, AnnotatedConstraint], ...]] | None:
    """The ``worker-<i>`` leaves under the ``worker`` set (podgrouper-rules.md §4.6): segments that
    cover the worker minimum (``minimum``) need their size, the job's last one its remainder; the
    segments beyond are optional (min 0), so the job starts once its minimum runs and is not stale
    without them. Each segment gets the segment topology constraint, if the annotations give one."""
    raw = worker.annotations.get(SEGMENT_SIZE)
    if raw is None:
        return None
    apath = join(join(path, "metadata"), "annotations")
    try:
        size = int(raw)
    except ValueError as exc:
        raise ManifestError(join(apath, SEGMENT_SIZE), f"expected a whole number, got {raw!r}") from exc
    if size <= 0:
        raise ManifestError(join(apath, SEGMENT_SIZE), f"must be positive, got {size}")
    workers = worker.pod.count
    parts = math.ceil(workers / size)
    if parts > MAX_SEGMENTS:
        raise ManifestError(
            join(apath, SEGMENT_SIZE), f"{workers} workers make {parts} segments, more than {MAX_SEGMENTS}"
        )
    sizes = [size] * (parts - 1) + [workers - size * (parts - 1)]
    mandatory = math.ceil(minimum / size)
    subgroups = [
        SubGroup(name=f"worker-{i}", parent="worker", min_available=n if i < mandatory else 0)
        for i, n in enumerate(sizes)
    ]
    pods = [worker.with_pod(count=n, subgroup=f"worker-{i}") for i, n in enumerate(sizes)]
    topology = segment_constraint(worker.annotations, apath, meta.annotations)
    constrained = tuple((sub.name, topology) for sub in subgroups) if topology is not None else ()
    return [SubGroup(name="worker", min_subgroup=parts), *subgroups], pods, constrained


def group_pytorch(obj: dict[str, Any], path: str, meta: Meta, ctx: Context) -> list[Draft]:
    specs = replica_specs(obj, path, meta)
    spath = join(path, "spec")
    min_available = sum(replicas for _, replicas, _ in specs)
    epath = join(spath, "elasticPolicy")
    elastic = get_map(obj["spec"], "elasticPolicy", spath)
    elastic_min = get_int(elastic, "minReplicas", epath)
    if elastic_min is not None:
        if elastic_min < 0:
            raise ManifestError(join(epath, "minReplicas"), f"must not be negative, got {elastic_min}")
        min_available = check_count(elastic_min, join(epath, "minReplicas"))
    scheduling = _scheduling_min(obj, path)
    if scheduling is not None:
        min_available = scheduling
    by_type = {rtype: (replicas, template) for rtype, replicas, template in specs}
    masters = by_type["Master"][0] if "Master" in by_type else 0
    subgroups: list[SubGroup] = []
    pods: list[PodTemplate] = []
    constrained: tuple[tuple[str, AnnotatedConstraint], ...] = ()
    if masters > 0:
        subgroups.append(SubGroup(name="master", min_available=masters))
    for rtype, _, template in specs:
        if rtype == "Master":
            pods.append(template.with_pod(subgroup="master"))
        elif rtype == "Worker":
            worker_min = max(0, min_available - masters)
            wpath = join(join(join(spath, "pytorchReplicaSpecs"), "Worker"), "template")
            segmented = _segments(template, wpath, worker_min, meta)
            if segmented is None:
                subgroups.append(SubGroup(name="worker", min_available=worker_min))
                pods.append(template.with_pod(subgroup="worker"))
            else:
                subgroups += segmented[0]
                pods += segmented[1]
                constrained = segmented[2]
        else:
            pods.append(template)
    return _draft(meta, pods, min_available, subgroups, constrained)


def group_paddle(obj: dict[str, Any], path: str, meta: Meta, ctx: Context) -> list[Draft]:
    """Not registered in KAI: its default grouper, one group of min 1."""
    return shared_group(meta, meta.kind, [t for _, _, t in replica_specs(obj, path, meta)])
