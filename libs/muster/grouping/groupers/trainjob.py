"""Kubeflow Trainer v2 TrainJob: grouped as the JobSet it expands into (KAI skips the
TrainJob and groups its JobSet, which inherits the TrainJob's labels and annotations): one
group with the JobSet's sub-group tree (podgrouper-rules.md §4.9, §4.10).

The JobSet's shape comes from the runtime named in ``spec.runtimeRef``, looked up
among the submitted documents (a ``ClusterTrainingRuntime`` or ``TrainingRuntime``).
The trainer's replicatedJob (label ``trainer.kubeflow.org/trainjob-ancestor-step:
trainer``, or the one named ``node``) runs ``numNodes`` pods (the TrainJob's
``trainer.numNodes``, else the runtime's ``mlPolicy.numNodes``, else 1), with
``trainer.resourcesPerNode`` replacing its container's resources. Without the
runtime document, the TrainJob is read as the trainer job alone.
"""

from __future__ import annotations

import copy
from typing import Any

from muster.grouping.errors import ManifestError
from muster.grouping.fields import get_count, get_map, get_str, join, require_map, string_map
from muster.grouping.groupers.jobset import annotated_min, jobset_drafts
from muster.grouping.model import Context, Draft, Meta
from muster.grouping.podspec import resource_amounts

ANCESTOR_LABEL = "trainer.kubeflow.org/trainjob-ancestor-step"
RUNTIME_KINDS = ("ClusterTrainingRuntime", "TrainingRuntime")


def _is_trainer(rjob: dict[str, Any]) -> bool:
    labels = ((rjob.get("template") or {}).get("metadata") or {}).get("labels") or {}
    return labels.get(ANCESTOR_LABEL) == "trainer" or rjob.get("name") == "node"


def group_trainjob(obj: dict[str, Any], path: str, meta: Meta, ctx: Context) -> list[Draft]:
    spath = join(path, "spec")
    spec = require_map(obj, "spec", path)
    tpath = join(spath, "trainer")
    trainer = get_map(spec, "trainer", spath)
    rpath = join(spath, "runtimeRef")
    runtime_name = get_str(get_map(spec, "runtimeRef", spath), "name", rpath)
    found = ctx.batch.find(RUNTIME_KINDS, runtime_name) if runtime_name else None
    runtime_spec = copy.deepcopy((found[1].get("spec") or {}) if found else {})
    default_nodes = ((runtime_spec.get("mlPolicy") or {}).get("numNodes")) or 1
    num_nodes = get_count(trainer, "numNodes", tpath, default_nodes)
    jobset_spec = (runtime_spec.get("template") or {}).get("spec") or {
        "replicatedJobs": [
            {"name": "node", "template": {"spec": {"template": {"spec": {"containers": [{}]}}}}}
        ]
    }
    resources = get_map(trainer, "resourcesPerNode", tpath)
    resource_amounts(
        resources, join(tpath, "resourcesPerNode")
    )  # reject bad quantities where the user wrote them
    jobs = jobset_spec.get("replicatedJobs") or []
    trainers = [rjob for rjob in jobs if isinstance(rjob, dict) and _is_trainer(rjob)]
    if not trainers:
        raise ManifestError(rpath, f"runtime {runtime_name!r} has no trainer job")
    for rjob in trainers:
        job_spec = rjob.setdefault("template", {}).setdefault("spec", {})
        job_spec["parallelism"] = job_spec["completions"] = num_nodes
        if resources:
            containers = (
                job_spec.setdefault("template", {}).setdefault("spec", {}).setdefault("containers", [{}])
            )
            containers[0] = {**containers[0], "resources": resources}
    annotated_min(meta.annotations, join(join(path, "metadata"), "annotations"))
    # Errors inside the runtime's template name the TrainJob's runtimeRef: that is what the user controls.
    try:
        # The trainer copies the TrainJob's annotations onto the JobSet where the runtime's template
        # sets none, a batch-min-member among them.
        template = runtime_spec.get("template") or {}
        own = string_map(get_map(template, "metadata", "template"), "annotations", "template.metadata")
        notes = {**meta.annotations, **own}
        return jobset_drafts(jobset_spec, "", meta, "TrainJob", notes, "template.metadata.annotations")
    except ManifestError as exc:
        raise ManifestError(rpath, f"runtime {runtime_name!r}: {exc}") from exc
