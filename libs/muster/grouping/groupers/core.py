"""Kubernetes' own workloads: Pod, Deployment, ReplicaSet, StatefulSet, Job, CronJob.

None of them is a gang in KAI unless asked. Deployment pods each get their own
group (named ``<owner>-<i>``, or the owner's name when there is one pod); a
ReplicaSet, StatefulSet or CronJob run shares one group of min 1. A batch Job
shares one group too (since KAI v0.15; before, one group per pod), of min 1 or
the Job's ``kai.scheduler/batch-min-member`` annotation.
"""

from __future__ import annotations

from typing import Any

from muster.grouping import controller_labels
from muster.grouping.errors import ManifestError
from muster.grouping.fields import get_count, join, require_map
from muster.grouping.groupers.default import shared_group
from muster.grouping.model import IMPLICIT, Context, Draft, Meta, nested_meta, per_pod_names, pod_template
from muster.names import JOB

SPARK_APP_NAME = "spark-app-name"
SPARK_APP_SELECTOR = "spark-app-selector"
POD_GROUP_ANNOTATION = "pod-group-name"
BATCH_MIN_MEMBER = "kai.scheduler/batch-min-member"


def _template(
    spec: dict[str, Any], spath: str, *, role: str, count: int = 1, labels: dict[str, str] | None = None
):
    return pod_template(
        require_map(spec, "template", spath),
        join(spath, "template"),
        role=role,
        count=count,
        controller_labels=labels,
    )


def pod_group_name(meta: Meta) -> str:
    """A bare pod's group: its own, a native Spark application's, or one the user named."""
    if meta.annotations.get(POD_GROUP_ANNOTATION):
        return _job_name(meta.annotations[POD_GROUP_ANNOTATION], "metadata.annotations", POD_GROUP_ANNOTATION)
    if meta.labels.get(SPARK_APP_NAME) and meta.labels.get(SPARK_APP_SELECTOR):
        return _job_name(meta.labels[SPARK_APP_SELECTOR], "metadata.labels", SPARK_APP_SELECTOR)
    return meta.name


def _job_name(value: str, where: str, key: str) -> str:
    """A group name a pod's annotation or label gives, refused naming it when it is not a valid job name."""
    why = JOB.refusal(value)
    if why is not None:
        raise ManifestError(join(where, key), why)
    return value


def group_pod(obj: dict[str, Any], path: str, meta: Meta, ctx: Context) -> list[Draft]:
    template = pod_template(obj, path, role="pod", count=1)
    return [
        Draft(
            name=pod_group_name(meta), kind="Pod", top=meta, owners=(meta,), pods=(template,), min_available=1
        )
    ]


def group_deployment(obj: dict[str, Any], path: str, meta: Meta, ctx: Context) -> list[Draft]:
    spath = join(path, "spec")
    spec = require_map(obj, "spec", path)
    replicas = get_count(spec, "replicas", spath, 1)
    template = _template(spec, spath, role="pod")
    return [
        Draft(
            name=name,
            kind="Deployment",
            top=meta,
            owners=(IMPLICIT, meta),
            pods=(template,),
            min_available=1,
            priority_fallback="inference",
            priority_scope="top",
        )
        for name in per_pod_names(meta.name, replicas)
    ]


def group_replicated(obj: dict[str, Any], path: str, meta: Meta, ctx: Context) -> list[Draft]:
    """ReplicaSet and StatefulSet: KAI's default grouper, all replicas in one group of min 1."""
    spath = join(path, "spec")
    spec = require_map(obj, "spec", path)
    replicas = get_count(spec, "replicas", spath, 1)
    return shared_group(meta, meta.kind, [_template(spec, spath, role="pod", count=replicas)])


def job_pods(spec: dict[str, Any], spath: str) -> int:
    """Pods a Job runs at once: ``parallelism`` (default 1), no more than ``completions``."""
    parallelism = get_count(spec, "parallelism", spath, 1)
    completions = get_count(spec, "completions", spath, parallelism, bounded=False)
    return min(parallelism, completions)


def batch_min_member(meta: Meta, path: str, default: int) -> int:
    """The gang size a Job asks for with ``kai.scheduler/batch-min-member`` on its own metadata."""
    return get_count(meta.annotations, BATCH_MIN_MEMBER, join(join(path, "metadata"), "annotations"), default)


def group_job(obj: dict[str, Any], path: str, meta: Meta, ctx: Context) -> list[Draft]:
    """One group for all the Job's pods (KAI v0.15), min 1 unless the Job asks for a gang."""
    spath = join(path, "spec")
    spec = require_map(obj, "spec", path)
    count = job_pods(spec, spath)
    minimum = batch_min_member(meta, path, 1)
    if count == 0:
        return []
    if minimum > count:
        # KAI writes it and the pods wait forever; refusing says why at submission instead.
        raise ManifestError(
            join(join(join(path, "metadata"), "annotations"), BATCH_MIN_MEMBER),
            f"asks for a gang of {minimum} pods but the Job runs {count} at once",
        )
    template = _template(
        spec, spath, role="pod", count=count, labels=controller_labels.synthesised("Job", name=meta.name)
    )
    return [
        Draft(name=meta.name, kind="Job", top=meta, owners=(meta,), pods=(template,), min_available=minimum)
    ]


def group_cronjob(obj: dict[str, Any], path: str, meta: Meta, ctx: Context) -> list[Draft]:
    """One group per run, grouped as the run's Job: labels from ``jobTemplate``, not the CronJob."""
    spath = join(path, "spec")
    spec = require_map(obj, "spec", path)
    jpath = join(spath, "jobTemplate")
    job_template = require_map(spec, "jobTemplate", spath)
    job = nested_meta(job_template, jpath, kind="Job", name=meta.name)
    jspath = join(jpath, "spec")
    job_spec = require_map(job_template, "spec", jpath)
    count = job_pods(job_spec, jspath)
    if count == 0:
        return []
    template = _template(job_spec, jspath, role="pod", count=count)
    return [Draft(name=meta.name, kind="CronJob", top=job, owners=(job,), pods=(template,), min_available=1)]


def require_positive(value: int, path: str) -> int:
    if value <= 0:
        raise ManifestError(path, f"must be positive, got {value}")
    return value
