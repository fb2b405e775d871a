"""JobSet: a gang per replicatedJob (InOrder startup) or one gang of all of them.

Per replicatedJob: ``replicas`` (default 1, at least 1) × pods per Job
(``parallelism``, default 1, at least 1, capped by a smaller positive
``completions``). With ``startupPolicy.startupPolicyOrder: InOrder`` each
replicatedJob is its own group ``<jobset>-<replicatedJob>``, so a later job's
gang cannot block an earlier one; any other order makes one group.

An absent startupPolicy is read as KAI's code reads it: InOrder. (On a live
cluster JobSet's defaulting webhook would have written AnyOrder first; muster
groups the manifest as submitted, like KAI's unit tests do. See
podgrouper-rules.md §6.1.)
"""

from __future__ import annotations

from typing import Any

from muster.grouping.fields import as_map, get_int, get_list, get_map, get_str, join, require_map
from muster.grouping.limits import check_count
from muster.grouping.model import Context, Draft, Meta, PodTemplate, pod_template

ABSENT_STARTUP_ORDER = "InOrder"


def _at_least_one(value: int | None) -> int:
    return value if value is not None and value > 0 else 1


def replicated_jobs(spec: dict[str, Any], spath: str) -> list[tuple[str, int, PodTemplate]]:
    """(name, min_available, pods) per replicatedJob."""
    out = []
    for i, raw in enumerate(get_list(spec, "replicatedJobs", spath)):
        rpath = join(join(spath, "replicatedJobs"), i)
        rjob = as_map(raw, rpath)
        name = get_str(rjob, "name", rpath) or f"job-{i}"
        replicas = check_count(_at_least_one(get_int(rjob, "replicas", rpath)), join(rpath, "replicas"))
        tpath = join(rpath, "template")
        jpath = join(tpath, "spec")
        job_spec = require_map(require_map(rjob, "template", rpath), "spec", tpath)
        parallelism = check_count(
            _at_least_one(get_int(job_spec, "parallelism", jpath)), join(jpath, "parallelism")
        )
        completions = get_int(job_spec, "completions", jpath)
        if completions is not None and 0 < completions < parallelism:
            parallelism = completions
        count = check_count(replicas * parallelism, rpath)
        template = pod_template(
            require_map(job_spec, "template", jpath), join(jpath, "template"), role=name, count=count
        )
        out.append((name, count, template))
    check_count(sum(count for _, count, _ in out), join(spath, "replicatedJobs"))
    return out


def jobset_drafts(spec: dict[str, Any], spath: str, meta: Meta, kind: str) -> list[Draft]:
    """The groups of a JobSet spec owned by ``meta`` (a JobSet, or a TrainJob's)."""
    jobs = replicated_jobs(spec, spath)
    ppath = join(spath, "startupPolicy")
    order = (
        get_str(get_map(spec, "startupPolicy", spath), "startupPolicyOrder", ppath) or ABSENT_STARTUP_ORDER
    )
    if order == "InOrder":
        return [
            Draft(
                name=f"{meta.name}-{name}",
                kind=kind,
                top=meta,
                owners=(meta,),
                pods=(pods,),
                min_available=count,
            )
            for name, count, pods in jobs
        ]
    if not jobs:
        return []
    return [
        Draft(
            name=meta.name,
            kind=kind,
            top=meta,
            owners=(meta,),
            pods=tuple(pods for _, _, pods in jobs),
            min_available=sum(count for _, count, _ in jobs),
        )
    ]


def group_jobset(obj: dict[str, Any], path: str, meta: Meta, ctx: Context) -> list[Draft]:
    return jobset_drafts(require_map(obj, "spec", path), join(path, "spec"), meta, "JobSet")
