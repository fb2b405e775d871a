"""JobSet (KAI v0.16, podgrouper-rules.md §4.9): one group per JobSet, a two-level sub-group tree.

- The root needs ``min_subgroup`` of the replicatedJobs: the JobSet's ``kai.scheduler/batch-min-member``
  (at least 1, capped at the number of replicatedJobs), else 1 for ``startupPolicyOrder: InOrder``
  (the JobSet controller creates one replicatedJob at a time), else all of them. An absent
  startupPolicy is AnyOrder, as KAI reads it since v0.16 and as JobSet's defaulting webhook writes it.
- Each replicatedJob is a parent sub-group named after it that needs all its ``replicas`` (1 when
  absent).
- Each replica is a leaf ``<replicatedJob>-replica-<i>`` holding that Job's ``parallelism`` pods (1
  when absent) and needing the Job template's ``kai.scheduler/batch-min-member``, else all of them.

KAI places a pod in its leaf by the pod's JobSet labels; muster builds the pods from the templates,
so replica i's pods are the leaf's. Each replica's leaf takes its own topology constraint from the Job
template's ``kai.scheduler/topology`` and ``topology-{required,preferred}-placement`` annotations (KAI
gives none unless the name and a level are both there); the parents carry none.

KAI's legacy path (the flat v0.15 form, chosen when a PodGroup without sub-groups already exists for
the JobSet) needs the cluster's existing PodGroups, which muster's grouping never has: every JobSet
gets the tree.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from muster.events import SubGroup
from muster.grouping import controller_labels
from muster.grouping.errors import ManifestError
from muster.grouping.external_podgroup import SKIP_PODGROUPER, skips_podgrouper
from muster.grouping.fields import as_map, get_count, get_int, get_list, get_map, get_str, join, require_map
from muster.grouping.groupers.core import BATCH_MIN_MEMBER
from muster.grouping.limits import check_count
from muster.grouping.metadata import annotated_constraint
from muster.grouping.model import (
    AnnotatedConstraint,
    Context,
    Draft,
    Meta,
    PodTemplate,
    nested_meta,
    pod_template,
)

IN_ORDER = "InOrder"


@dataclass(frozen=True)
class ReplicatedJob:
    """One ``spec.replicatedJobs[]`` entry: ``replicas`` Jobs of the same pods."""

    name: str
    replicas: int
    leaf_min: int
    """Pods each replica's leaf needs."""
    pods: PodTemplate
    """One replica's pods (``parallelism`` of them)."""
    topology: AnnotatedConstraint | None = None
    """Each replica's leaf's own constraint (the Job template's annotations)."""

    def leaf(self, i: int) -> str:
        return f"{self.name}-replica-{i}"


def annotated_min(annotations: dict[str, str], apath: str) -> int | None:
    """``kai.scheduler/batch-min-member`` from annotations at ``apath``: an integer of at least 1."""
    value = get_int(annotations, BATCH_MIN_MEMBER, apath)
    if value is not None and value < 1:
        raise ManifestError(join(apath, BATCH_MIN_MEMBER), f"must be at least 1, got {value}")
    return value


def replicated_jobs(spec: dict[str, Any], spath: str) -> list[ReplicatedJob]:
    """The replicatedJobs of a JobSet spec, each bounded and checked where it is written."""
    out = []
    jobs_path = join(spath, "replicatedJobs")
    for i, raw in enumerate(get_list(spec, "replicatedJobs", spath)):
        rpath = join(jobs_path, i)
        rjob = as_map(raw, rpath)
        name = get_str(rjob, "name", rpath)
        if not name:
            raise ManifestError(join(rpath, "name"), "required field is missing")
        replicas = get_count(rjob, "replicas", rpath, 1)
        if replicas == 0:
            # KAI builds a parent sub-group without children, which its admission webhook rejects.
            raise ManifestError(join(rpath, "replicas"), "must be at least 1, got 0")
        tpath = join(rpath, "template")
        template = require_map(rjob, "template", rpath)
        job = nested_meta(template, tpath, kind="Job")
        apath = join(join(tpath, "metadata"), "annotations")
        if skips_podgrouper(job.annotations):
            # The JobSet is one group; one of its Jobs cannot hand its pods to a PodGroup of its own.
            raise ManifestError(
                join(apath, SKIP_PODGROUPER), "a replicatedJob's Job cannot leave the JobSet's group"
            )
        jpath = join(tpath, "spec")
        job_spec = require_map(template, "spec", tpath)
        parallelism = get_count(job_spec, "parallelism", jpath, 1)
        leaf_min = annotated_min(job.annotations, apath)
        if leaf_min is not None and leaf_min > parallelism:
            # KAI writes it and the replica waits for ever; refusing says why at submission instead.
            raise ManifestError(
                join(apath, BATCH_MIN_MEMBER),
                f"asks for {leaf_min} pods per replica but each Job runs {parallelism} at once",
            )
        check_count(replicas * parallelism, rpath)
        pods = pod_template(
            require_map(job_spec, "template", jpath), join(jpath, "template"), role=name, count=parallelism
        )
        topology = annotated_constraint([(job.annotations, apath)], job.annotations, apath)
        out.append(
            ReplicatedJob(name, replicas, parallelism if leaf_min is None else leaf_min, pods, topology)
        )
    if not out:
        raise ManifestError(jobs_path, "a JobSet needs at least one replicatedJob")
    names = [r.name for r in out]
    for i, name in enumerate(names):
        if name in names[:i]:
            raise ManifestError(join(join(jobs_path, i), "name"), f"{name!r} names an earlier replicatedJob")
    check_count(sum(r.replicas * r.pods.pod.count for r in out), jobs_path)
    check_count(sum(1 + r.replicas for r in out), jobs_path, "sub-groups")
    return out


def root_min_subgroup(
    spec: dict[str, Any], spath: str, annotations: dict[str, str], apath: str, n: int
) -> int:
    """How many replicatedJobs (of ``n``) the JobSet needs: its annotation (capped at ``n``), else by
    startup order."""
    annotated = annotated_min(annotations, apath)
    if annotated is not None:
        return min(annotated, n)
    ppath = join(spath, "startupPolicy")
    order = get_str(get_map(spec, "startupPolicy", spath), "startupPolicyOrder", ppath)
    return 1 if order == IN_ORDER else n


def jobset_drafts(
    spec: dict[str, Any], spath: str, meta: Meta, kind: str, annotations: dict[str, str], apath: str
) -> list[Draft]:
    """The group of a JobSet spec owned by ``meta`` (a JobSet, or a TrainJob's); ``annotations`` are
    the JobSet's (at ``apath``)."""
    jobs = replicated_jobs(spec, spath)
    need = root_min_subgroup(spec, spath, annotations, apath, len(jobs))
    subgroups: list[SubGroup] = []
    pods: list[PodTemplate] = []
    constrained: list[tuple[str, AnnotatedConstraint]] = []
    global_replicas, global_index = sum(rjob.replicas for rjob in jobs), 0
    for rjob in jobs:
        subgroups.append(SubGroup(name=rjob.name, min_subgroup=rjob.replicas))
        for i in range(rjob.replicas):
            subgroups.append(SubGroup(name=rjob.leaf(i), parent=rjob.name, min_available=rjob.leaf_min))
            if rjob.topology is not None:
                constrained.append((rjob.leaf(i), rjob.topology))
            # Each replica is a Job of its own: its pods carry its index (the template's labels win).
            labels = controller_labels.synthesised(
                "JobSet",
                name=meta.name,
                role=rjob.name,
                index=i,
                global_index=global_index,
                replicas=rjob.replicas,
                global_replicas=global_replicas,
            )
            labels.update(rjob.pods.labels)
            pods.append(rjob.pods.with_pod(subgroup=rjob.leaf(i), labels=labels))
            global_index += 1
    # KAI writes no minMember here; muster's figure is the fewest pods that satisfy the tree.
    costs = sorted(rjob.replicas * rjob.leaf_min for rjob in jobs)
    return [
        Draft(
            name=meta.name,
            kind=kind,
            top=meta,
            owners=(meta,),
            pods=tuple(pods),
            min_available=sum(costs[:need]),
            subgroups=tuple(subgroups),
            min_subgroup=need,
            subgroup_topologies=tuple(constrained),
        )
    ]


def group_jobset(obj: dict[str, Any], path: str, meta: Meta, ctx: Context) -> list[Draft]:
    apath = join(join(path, "metadata"), "annotations")
    spec = require_map(obj, "spec", path)
    return jobset_drafts(spec, join(path, "spec"), meta, "JobSet", meta.annotations, apath)
