"""Kubeflow Notebook: one pod (its StatefulSet's), priority ``build`` unless labelled."""

from __future__ import annotations

from typing import Any

from muster.grouping import controller_labels
from muster.grouping.fields import join, require_map
from muster.grouping.model import IMPLICIT, Context, Draft, Meta, pod_template


def group_notebook(obj: dict[str, Any], path: str, meta: Meta, ctx: Context) -> list[Draft]:
    spath = join(path, "spec")
    spec = require_map(obj, "spec", path)
    template = pod_template(
        require_map(spec, "template", spath),
        join(spath, "template"),
        role="notebook",
        count=1,
        controller_labels=controller_labels.synthesised("Notebook", name=meta.name),
    )
    return [
        Draft(
            name=meta.name,
            kind="Notebook",
            top=meta,
            owners=(IMPLICIT, meta),
            pods=(template,),
            min_available=1,
            priority_fallback="build",
            priority_scope="top",
        )
    ]
