"""The default rule: one pod group for everything the top owner creates, min 1.

Kinds KAI sends to its default grouper on purpose (ReplicaSet, StatefulSet,
PaddleJob, SparkApplication) and kinds muster does not know at all get the same
answer (cli.md, podgrouper-rules.md §2): one group of min 1 named after the
owner. For an unknown kind the pods are the pod templates found anywhere under
``spec``, and ``kind`` says ``"<Kind> (default rule)"``.
"""

from __future__ import annotations

from typing import Any

from muster.grouping.fields import join
from muster.grouping.limits import check_count
from muster.grouping.model import Context, Draft, Meta, PodTemplate, pod_template

# Keys that hold a pod template rather than naming a role.
_STRUCTURAL = {"spec", "template", "templates", "podSpec", "podTemplate", "jobTemplate"}
_COUNT_KEYS = ("replicas", "parallelism", "instances")


def _count(node: dict[str, Any], path: str) -> int:
    for key in _COUNT_KEYS:
        value = node.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            return check_count(max(value, 0), join(path, key))
    return 1


def find_pod_templates(value: Any, path: str, *, role: str = "pod", multiplier: int = 1) -> list[PodTemplate]:
    """Every pod template under ``value``, each counted by the replica-like
    fields (``replicas``, ``parallelism``, ``instances``) on the way down."""
    found: list[PodTemplate] = []
    if isinstance(value, list):
        for i, item in enumerate(value):
            name = item.get("name") if isinstance(item, dict) else None
            found += find_pod_templates(
                item, join(path, i), role=str(name) if name else role, multiplier=multiplier
            )
        return found
    if not isinstance(value, dict):
        return found
    spec = value.get("spec")
    if isinstance(spec, dict) and isinstance(spec.get("containers"), list):
        return [pod_template(value, path, role=role, count=multiplier)]
    if isinstance(value.get("containers"), list):
        return [pod_template(value, path, role=role, count=multiplier, spec_key=None)]
    multiplier = check_count(multiplier * _count(value, path), path)
    for key, child in value.items():
        child_role = role if key in _STRUCTURAL else str(key).lower()
        found += find_pod_templates(child, join(path, str(key)), role=child_role, multiplier=multiplier)
    return found


def shared_group(
    meta: Meta, kind: str, pods: list[PodTemplate], *, priority_fallback: str = "train"
) -> list[Draft]:
    """KAI's default grouper: one group named after the owner, min 1."""
    pods = [t for t in pods if t.pod.count > 0]
    if not pods:
        return []
    return [
        Draft(
            name=meta.name,
            kind=kind,
            top=meta,
            owners=(meta,),
            pods=tuple(pods),
            min_available=1,
            priority_fallback=priority_fallback,
        )
    ]


def group_unknown(obj: dict[str, Any], path: str, meta: Meta, ctx: Context) -> list[Draft]:
    """A kind no plugin knows: KAI's default rule over the pod templates under ``spec``."""
    pods = find_pod_templates(obj.get("spec"), join(path, "spec"))
    return shared_group(meta, f"{meta.kind} (default rule)", pods)


def group_spotrequest(obj: dict[str, Any], path: str, meta: Meta, ctx: Context) -> list[Draft]:
    """NVIDIA's ``SPOTRequest``: KAI's default rule, with ``inference`` as the priority class when the
    workload names none (podgrouper-rules §4.15)."""
    pods = find_pod_templates(obj.get("spec"), join(path, "spec"))
    return shared_group(meta, meta.kind, pods, priority_fallback="inference")
