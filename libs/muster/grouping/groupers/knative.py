"""Knative Service: one gang per Revision (KAI's ``--knative-gang-schedule``, on by default).

The Revision is the one the Service's ``spec.template`` stamps out: named by
``spec.template.metadata.name``, else ``<service>-00001``. min_available is its
``autoscaling.knative.dev/min-scale`` annotation (1 when missing or unparsable,
and ``"0"`` really is 0); the group holds ``max(min-scale, initial-scale)`` pods
(``initial-scale`` defaults to 1). Queue, priority and preemptibility come from the
Revision's labels (the Service's, under the template's own) and the pod; the
priority fallback is ``inference``. Knative's queue-proxy sidecar is not counted.
"""

from __future__ import annotations

from typing import Any

from muster.grouping import controller_labels
from muster.grouping.fields import join, require_map
from muster.grouping.limits import check_count
from muster.grouping.model import IMPLICIT, Context, Draft, Meta, nested_meta, pod_template

MIN_SCALE = ("autoscaling.knative.dev/min-scale", "autoscaling.knative.dev/minScale")
INITIAL_SCALE = ("autoscaling.knative.dev/initial-scale", "autoscaling.knative.dev/initialScale")


def _scale(annotations: dict[str, str], keys: tuple[str, ...], default: int) -> int:
    for key in keys:
        if key in annotations:
            try:
                return max(0, int(annotations[key]))
            except ValueError:
                return default
    return default


def group_knative_service(obj: dict[str, Any], path: str, meta: Meta, ctx: Context) -> list[Draft]:
    spath = join(path, "spec")
    spec = require_map(obj, "spec", path)
    tpath = join(spath, "template")
    template = require_map(spec, "template", spath)
    revision = nested_meta(template, tpath, kind="Revision", name=f"{meta.name}-00001")
    revision = revision.merged(meta.labels, {})
    min_scale = _scale(revision.annotations, MIN_SCALE, 1)
    pods = max(min_scale, _scale(revision.annotations, INITIAL_SCALE, 1))
    check_count(pods, join(join(tpath, "metadata"), "annotations"))
    if pods == 0:
        return []
    labels = controller_labels.synthesised("KnativeService", name=meta.name, revision=revision.name)
    pod = pod_template(template, tpath, role="pod", count=pods, controller_labels=labels)
    return [
        Draft(
            name=revision.name,
            kind="Service",
            top=revision,
            owners=(IMPLICIT, IMPLICIT, revision),
            pods=(pod,),
            min_available=min_scale,
            priority_fallback="inference",
            priority_scope="top",
        )
    ]
