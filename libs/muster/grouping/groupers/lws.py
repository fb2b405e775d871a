"""LeaderWorkerSet: one gang per replica group, ``<lws>-group-<n>``.

Group size S = ``leaderWorkerTemplate.size`` (required, > 0). With
``startupPolicy: LeaderCreated`` (the default) min_available is S. With
``LeaderReady`` KAI sizes the gang at 1 while the leader is unbound and at S
after; at submission the leader is unbound, so muster starts it at 1.
Sub-groups: ``leader`` (1) and ``workers`` (min - 1, when positive); with a
segment size (``subGroupPolicy.subGroupSize``, else ``kai.scheduler/segment-size``
on the LWS, else on the worker template) the gang is split into ``segment-<i>``
sub-groups of that many pods, the leader counted in ``segment-0`` (``LeaderWorker``:
``segment-0`` is then a set of the leaves ``leader`` and ``workers``, both required) or in its own
``leader`` sub-group (``LeaderExcluded``). Every ``segment-<i>`` gets the segment topology constraint
when the annotations give one (``metadata.segment_constraint``); the leader's own sub-groups get none.
"""

from __future__ import annotations

from typing import Any

from muster.events import SubGroup
from muster.grouping import controller_labels
from muster.grouping.errors import ManifestError
from muster.grouping.fields import get_count, get_int, get_map, get_str, join, require_map
from muster.grouping.limits import check_count
from muster.grouping.metadata import segment_constraint
from muster.grouping.model import IMPLICIT, Context, Draft, Meta, PodTemplate, pod_template

SEGMENT_SIZE = "kai.scheduler/segment-size"
MAX_SEGMENTS = 10_000
"""KAI refuses to group a replica split into more segments than this (v0.17)."""


def _segment_size(lwt: dict[str, Any], lpath: str, meta: Meta, worker: PodTemplate) -> tuple[int | None, str]:
    ppath = join(lpath, "subGroupPolicy")
    policy = get_map(lwt, "subGroupPolicy", lpath)
    size = get_int(policy, "subGroupSize", ppath)
    where = join(ppath, "subGroupSize")
    for notes, npath in (
        (meta.annotations, "metadata.annotations"),
        (worker.annotations, join(join(lpath, "workerTemplate"), "metadata.annotations")),
    ):
        if size is None and SEGMENT_SIZE in notes:
            where = join(npath, SEGMENT_SIZE)
            try:
                size = int(notes[SEGMENT_SIZE])
            except ValueError as exc:
                raise ManifestError(where, f"expected a whole number, got {notes[SEGMENT_SIZE]!r}") from exc
    return size, where


def group_lws(obj: dict[str, Any], path: str, meta: Meta, ctx: Context) -> list[Draft]:
    spath = join(path, "spec")
    spec = require_map(obj, "spec", path)
    replicas = get_count(spec, "replicas", spath, 1)
    lpath = join(spath, "leaderWorkerTemplate")
    lwt = require_map(spec, "leaderWorkerTemplate", spath)
    size = get_int(lwt, "size", lpath)
    if size is None or size <= 0:
        raise ManifestError(join(lpath, "size"), f"required and must be positive, got {size}")
    check_count(size, join(lpath, "size"))
    check_count(replicas * size, join(spath, "replicas"))
    policy = get_str(spec, "startupPolicy", spath) or "LeaderCreated"
    if policy == "LeaderCreated":
        min_available = size
    elif policy == "LeaderReady":
        min_available = 1
    else:
        raise ManifestError(
            join(spath, "startupPolicy"), f"expected LeaderCreated or LeaderReady, got {policy!r}"
        )
    worker_raw = require_map(lwt, "workerTemplate", lpath)
    labels = controller_labels.synthesised("LeaderWorkerSet", name=meta.name)
    worker = pod_template(
        worker_raw, join(lpath, "workerTemplate"), role="worker", count=size - 1, controller_labels=labels
    )
    leader_key = "leaderTemplate" if lwt.get("leaderTemplate") is not None else "workerTemplate"
    leader = pod_template(
        lwt[leader_key], join(lpath, leader_key), role="leader", count=1, controller_labels=labels
    )

    segment, where = _segment_size(lwt, lpath, meta, worker)
    constrained = ()
    if segment is None:
        subgroups = [SubGroup(name="leader", min_available=1)]
        pods = [leader.with_pod(subgroup="leader")]
        if min_available - 1 > 0:
            subgroups.append(SubGroup(name="workers", min_available=min_available - 1))
        if size > 1:
            pods.append(worker.with_pod(subgroup="workers" if min_available > 1 else ""))
    else:
        subgroups, pods = _segmented(lwt, lpath, leader, worker, size, min_available, segment, where)
        wpath = join(join(lpath, "workerTemplate"), "metadata.annotations")
        topology = segment_constraint(worker.annotations, wpath, meta.annotations)
        if topology is not None:
            constrained = tuple((s.name, topology) for s in subgroups if s.name.startswith("segment-"))
    return [
        Draft(
            name=f"{meta.name}-group-{n}",
            kind="LeaderWorkerSet",
            top=meta,
            owners=(IMPLICIT, meta),
            pods=tuple(p for p in pods if p.pod.count > 0),
            min_available=min_available,
            subgroups=tuple(subgroups),
            subgroup_topologies=constrained,
        )
        for n in range(replicas)
    ]


def _segmented(lwt, lpath, leader, worker, size, min_available, segment, where):
    if segment <= 1 or segment > min_available:
        raise ManifestError(
            where, f"must be above 1 and at most the gang size {min_available}, got {segment}"
        )
    ppath = join(lpath, "subGroupPolicy")
    kind = get_str(get_map(lwt, "subGroupPolicy", lpath), "subGroupPolicyType", ppath) or "LeaderWorker"
    subgroups: list[SubGroup] = []
    pods: list[PodTemplate] = []
    if kind == "LeaderExcluded":
        if (size - 1) % segment:
            raise ManifestError(where, f"with LeaderExcluded, size - 1 ({size - 1}) must divide by {segment}")
        if (size - 1) // segment > MAX_SEGMENTS:
            raise ManifestError(where, f"size {size} makes more than {MAX_SEGMENTS} segments")
        subgroups.append(SubGroup(name="leader", min_available=1))
        pods.append(leader.with_pod(subgroup="leader"))
        for i in range((size - 1) // segment):
            subgroups.append(SubGroup(name=f"segment-{i}", min_available=segment))
            pods.append(worker.with_pod(count=segment, subgroup=f"segment-{i}"))
        return subgroups, pods
    if kind != "LeaderWorker":
        raise ManifestError(
            join(ppath, "subGroupPolicyType"), f"expected LeaderWorker or LeaderExcluded, got {kind!r}"
        )
    # Indexes 0 (the leader) .. size-1; when the workers split evenly the leader rides on top of
    # segment 0, else it takes one of segment 0's places (podgrouper-rules.md §4.11).
    extra = 1 if (size - 1) % segment == 0 else 0
    counts = [0] * ((size - 1 - extra) // segment + 1)
    if len(counts) > MAX_SEGMENTS:
        raise ManifestError(where, f"size {size} makes {len(counts)} segments, more than {MAX_SEGMENTS}")
    for w in range(size):
        counts[0 if w == 0 else (w - extra) // segment] += 1
    for i, n in enumerate(counts):
        if i == 0:
            subgroups += [
                SubGroup(name="segment-0", min_subgroup=2),
                SubGroup(name="leader", parent="segment-0", min_available=1),
                SubGroup(name="workers", parent="segment-0", min_available=n - 1),
            ]
            pods += [leader.with_pod(subgroup="leader"), worker.with_pod(count=n - 1, subgroup="workers")]
        else:
            subgroups.append(SubGroup(name=f"segment-{i}", min_available=n))
            pods.append(worker.with_pod(count=n, subgroup=f"segment-{i}"))
    return subgroups, pods
