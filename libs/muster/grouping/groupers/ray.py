"""Ray: RayCluster, RayJob and RayService each make one gang of their cluster.

min_available = 1 (head) + per worker group ``minReplicas × numOfHosts`` when
``minReplicas > 0``, else ``replicas × numOfHosts``; a group with both at 0, or
flagged ``suspended`` (the field KAI reads; KubeRay's own is ``suspend``, which
KAI does not see) does not count. Sub-groups: ``headgroup`` and one per counted
worker group, each with its own topology constraint when its template's annotations give a
required or preferred placement level (``kai.scheduler/topology`` must then name the topology). The
label ``ray.io/priority-class-name`` on the top owner wins over every other priority rule.

A RayJob in ``K8sJobMode`` (the default) also runs a submitter pod; it shares
the group but is not part of the gang or of any sub-group. Its resources are
KubeRay's default submitter's (500m CPU, 200Mi) unless ``submitterPodTemplate``
says otherwise.
"""

from __future__ import annotations

from typing import Any

from muster.events import SubGroup
from muster.grouping import controller_labels
from muster.grouping.errors import ManifestError
from muster.grouping.fields import as_map, get_bool, get_count, get_list, get_str, join, require_map
from muster.grouping.limits import check_count
from muster.grouping.metadata import (
    PREFERRED_PLACEMENT,
    REQUIRED_PLACEMENT,
    TOPOLOGY_ANNOTATION,
    annotated_constraint,
)
from muster.grouping.model import (
    IMPLICIT,
    AnnotatedConstraint,
    Context,
    Draft,
    Meta,
    PodTemplate,
    pod_template,
)

PRIORITY_LABEL = "ray.io/priority-class-name"
_DEFAULT_SUBMITTER = {
    "spec": {
        "containers": [
            {
                "name": "ray-job-submitter",
                "resources": {
                    "limits": {"cpu": "1", "memory": "1Gi"},
                    "requests": {"cpu": "500m", "memory": "200Mi"},
                },
            }
        ]
    }
}


def _template_constraint(template: PodTemplate, tpath: str) -> AnnotatedConstraint | None:
    """A head or worker group's own constraint from its template's annotations; KAI fails the grouping
    when a placement level comes without a topology name."""
    apath = join(join(tpath, "metadata"), "annotations")
    notes = template.annotations
    levels = [key for key in (REQUIRED_PLACEMENT, PREFERRED_PLACEMENT) if notes.get(key)]
    if levels and not notes.get(TOPOLOGY_ANNOTATION):
        raise ManifestError(
            join(apath, TOPOLOGY_ANNOTATION), f"required when {levels[0]} is set: it names the topology"
        )
    return annotated_constraint([(notes, apath)], notes, apath)


def cluster_gang(
    cluster: dict[str, Any], cpath: str, name: str | None
) -> tuple[int, list[SubGroup], list[PodTemplate], tuple[tuple[str, AnnotatedConstraint], ...]]:
    """(min_available, sub-groups, pods, the sub-groups' own constraints) of one RayCluster spec;
    ``name`` is the cluster's, None when KubeRay generates it (a RayJob's, a RayService's)."""
    controller = "RayGeneratedCluster" if name is None else "RayCluster"
    hpath = join(cpath, "headGroupSpec")
    head_spec = require_map(cluster, "headGroupSpec", cpath)
    head = pod_template(
        require_map(head_spec, "template", hpath),
        join(hpath, "template"),
        role="head",
        count=1,
        subgroup="headgroup",
        controller_labels=controller_labels.synthesised(controller, name=name, role="head"),
    )
    minimum, subgroups, pods = 1, [SubGroup(name="headgroup", min_available=1)], [head]
    constrained: list[tuple[str, AnnotatedConstraint]] = []
    if (own := _template_constraint(head, join(hpath, "template"))) is not None:
        constrained.append(("headgroup", own))
    for i, raw in enumerate(get_list(cluster, "workerGroupSpecs", cpath)):
        wpath = join(join(cpath, "workerGroupSpecs"), i)
        group = as_map(raw, wpath)
        group_name = get_str(group, "groupName", wpath) or f"worker-group-{i}"
        replicas = get_count(group, "replicas", wpath, 0)
        min_replicas = get_count(group, "minReplicas", wpath, 0)
        hosts = get_count(group, "numOfHosts", wpath, 1) or 1
        check_count(replicas * hosts, wpath)
        if min_replicas > replicas:
            raise ManifestError(
                join(wpath, "minReplicas"), f"must not exceed replicas ({min_replicas} > {replicas})"
            )
        counted = not get_bool(group, "suspended", wpath) and (replicas > 0 or min_replicas > 0)
        if counted:
            contribution = (min_replicas if min_replicas > 0 else replicas) * hosts
            minimum += contribution
            subgroups.append(SubGroup(name=group_name, min_available=contribution))
        template = pod_template(
            require_map(group, "template", wpath),
            join(wpath, "template"),
            role=group_name,
            count=replicas * hosts,
            subgroup=group_name if counted else "",
            controller_labels=controller_labels.synthesised(
                controller, name=name, role="worker", group=group_name
            ),
        )
        if counted and (own := _template_constraint(template, join(wpath, "template"))) is not None:
            constrained.append((group_name, own))
        if template.pod.count > 0:
            pods.append(template)
    return minimum, subgroups, pods, tuple(constrained)


def _draft(
    meta: Meta, owners: tuple[Meta, ...], cluster: dict[str, Any], cpath: str, extra=()
) -> list[Draft]:
    # Only a RayCluster names its own cluster; a RayJob's or RayService's gets a generated name.
    cluster_name = meta.name if meta.kind == "RayCluster" else None
    minimum, subgroups, pods, constrained = cluster_gang(cluster, cpath, cluster_name)
    return [
        Draft(
            name=meta.name,
            kind=meta.kind,
            top=meta,
            owners=owners,
            pods=tuple(pods) + tuple(extra),
            min_available=minimum,
            subgroups=tuple(subgroups),
            subgroup_topologies=constrained,
            priority_class=meta.labels.get(PRIORITY_LABEL) or None,
        )
    ]


def group_raycluster(obj: dict[str, Any], path: str, meta: Meta, ctx: Context) -> list[Draft]:
    return _draft(meta, (meta,), require_map(obj, "spec", path), join(path, "spec"))


def group_rayjob(obj: dict[str, Any], path: str, meta: Meta, ctx: Context) -> list[Draft]:
    spath = join(path, "spec")
    spec = require_map(obj, "spec", path)
    if spec.get("rayClusterSpec") is None:
        raise ManifestError(
            join(spath, "rayClusterSpec"),
            "required: a RayJob on an existing cluster (clusterSelector) makes no gang",
        )
    extra: list[PodTemplate] = []
    if (get_str(spec, "submissionMode", spath) or "K8sJobMode") == "K8sJobMode":
        tpath = join(spath, "submitterPodTemplate")
        template = spec.get("submitterPodTemplate") or _DEFAULT_SUBMITTER
        extra.append(pod_template(template, tpath, role="submitter", count=1))
    return _draft(
        meta,
        (IMPLICIT, meta),
        require_map(spec, "rayClusterSpec", spath),
        join(spath, "rayClusterSpec"),
        extra,
    )


def group_rayservice(obj: dict[str, Any], path: str, meta: Meta, ctx: Context) -> list[Draft]:
    spath = join(path, "spec")
    spec = require_map(obj, "spec", path)
    return _draft(
        meta, (IMPLICIT, meta), require_map(spec, "rayClusterConfig", spath), join(spath, "rayClusterConfig")
    )
