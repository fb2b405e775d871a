"""Kinds that create a workload on a schedule: Argo CronWorkflow, Spark ScheduledSparkApplication.

Each run is grouped as the object the controller creates from the template, the
way a CronJob run is grouped as its Job (podgrouper-rules.md §4.5): a CronWorkflow
as the Workflow of ``spec.workflowSpec``, a ScheduledSparkApplication as the
SparkApplication of ``spec.template``. Groups are named after the scheduling
object (a run's own name carries a timestamp) and report its kind.

Labels: Argo gives the Workflow the labels of ``spec.workflowMetadata``; the
Spark operator copies the ScheduledSparkApplication's own. KAI itself sees the
scheduling object as the pods' top owner and reads its labels, so the
CronWorkflow's labels count too, under the Workflow's own.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from muster.grouping.fields import get_map, join, require_map, string_map
from muster.grouping.groupers.argo import workflow_drafts
from muster.grouping.groupers.spark import spark_drafts
from muster.grouping.model import Context, Draft, Meta

CRON_WORKFLOW_LABEL = "workflows.argoproj.io/cron-workflow"


def group_cron_workflow(obj: dict[str, Any], path: str, meta: Meta, ctx: Context) -> list[Draft]:
    spath = join(path, "spec")
    spec = require_map(obj, "spec", path)
    mpath = join(spath, "workflowMetadata")
    created = get_map(spec, "workflowMetadata", spath)
    workflow = Meta(
        api_version=meta.api_version,
        kind="Workflow",
        name=meta.name,
        labels={**string_map(created, "labels", mpath), CRON_WORKFLOW_LABEL: meta.name},
        annotations=string_map(created, "annotations", mpath),
    ).merged(meta.labels, meta.annotations)
    wpath = join(spath, "workflowSpec")
    drafts = workflow_drafts(require_map(spec, "workflowSpec", spath), wpath, workflow, ctx, scheduled=True)
    # The workflow's own pods report the scheduling kind; objects its steps create keep theirs.
    return [replace(d, kind=meta.kind) if d.kind == "Workflow" else d for d in drafts]


def group_scheduled_spark(obj: dict[str, Any], path: str, meta: Meta, ctx: Context) -> list[Draft]:
    spath = join(path, "spec")
    spec = require_map(obj, "spec", path)
    return spark_drafts(require_map(spec, "template", spath), join(spath, "template"), meta, meta.kind)
