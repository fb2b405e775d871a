"""KAI's externally created PodGroups (podgrouper-rules.md §1.1, kai-semantics.md §14): a
``scheduling.run.ai/v2alpha2`` ``PodGroup`` submitted together with the pods that join it.

A pod joins the PodGroup its ``pod-group-name`` annotation names, in the leaf its
``kai.scheduler/subgroup-name`` label names. KAI's podgrouper leaves such a pod alone when the pod
or an owner says ``kai.scheduler/skip-podgrouper: "true"`` (any other value is ignored, as KAI
ignores it), and always for a bare pod (no owners) that carries the annotation. The PodGroup's spec,
never the pods' labels, decides queue, priority, preemptibility, gang, tree, topology and timing.

muster has no cluster to look PodGroups up in, so the PodGroup must come in the same submission: a
skipped pod that names none of the submission's PodGroups is refused naming its annotation (a bare
pod naming an unknown group keeps muster's older reading: the pods sharing the name form a group).
Where KAI's admission webhook warns or the scheduler quietly never runs a pod (a leaf no pod can
fill, a pod outside the tree, §14.7), this refuses, naming the field. A spec field muster cannot
honour is refused by name, never dropped.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from muster import runtimes
from muster.events import PodGroupCreated, SubGroup, Topology
from muster.grouping.errors import ManifestError
from muster.grouping.fields import as_map, get_int, get_list, get_map, get_str, join
from muster.grouping.metadata import (
    DEFAULT_POOL,
    NODE_POOL_LABEL,
    PRIORITY_CLASSES,
    UNKNOWN_CLASS_PRIORITY,
    resolve_topology,
)
from muster.grouping.model import Draft, Meta, PodTemplate
from muster.grouping.timing import duration_seconds
from muster.names import JOB, POOL, QUEUE
from muster.subgroups import SubGroupError, check_tree
from muster.topologies import TopologyDef

API_GROUP = "scheduling.run.ai"
VERSION = "v2alpha2"
KIND = "PodGroup"
SKIP_PODGROUPER = "kai.scheduler/skip-podgrouper"
POD_GROUP_ANNOTATION = "pod-group-name"
SUBGROUP_LABEL = "kai.scheduler/subgroup-name"

_SPEC = "spec"
_SPEC_FIELDS = frozenset(
    {
        "minMember",
        "minSubGroup",
        "queue",
        "priorityClassName",
        "preemptibility",
        "topologyConstraint",
        "subGroups",
        "preemptionDelay",
        "stalenessGracePeriod",
    }
)
# Fields of the API that muster has nothing to do with: said why rather than dropped.
_UNHONOURED = {
    "markUnschedulable": "muster sets no pod events or conditions; remove the field",
    "schedulingBackoff": "muster retries a pending group every cycle and never marks it unschedulable; "
    "remove the field",
    "parallelism": "an older PodGroup field KAI no longer reads; remove it",
    "completions": "an older PodGroup field KAI no longer reads; remove it",
    "backoffLimit": "an older PodGroup field KAI no longer reads; remove it",
}
_SUBGROUP_FIELDS = frozenset({"name", "parent", "minMember", "minSubGroup", "topologyConstraint"})
_TOPOLOGY_FIELDS = frozenset({"topology", "requiredTopologyLevel", "preferredTopologyLevel"})
_DOCUMENT_FIELDS = frozenset({"apiVersion", "kind", "metadata", "spec", "status"})
_DNS_LABEL = re.compile(r"[a-z0-9](?:[-a-z0-9]{0,61}[a-z0-9])?")
# check_tree names the event's fields; a PodGroup's author wrote the manifest's.
_TREE_FIELDS = (("subgroups", "subGroups"), ("min_available", "minMember"), ("min_subgroup", "minSubGroup"))


@dataclass(frozen=True)
class PodGroupManifest:
    """A submitted PodGroup, read and checked; its pods are still to come."""

    index: int
    """The document it came from."""
    name: str
    pool: str
    queue: str | None
    priority_class: str | None
    preemptible: bool | None
    min_member: int | None
    min_subgroup: int | None
    subgroups: tuple[SubGroup, ...]
    topology: Topology | None
    preemption_delay: float | None
    stale_gang_grace: float | None

    @property
    def leaves(self) -> frozenset[str]:
        parents = {s.parent for s in self.subgroups}
        return frozenset(s.name for s in self.subgroups if s.name not in parents)


def is_podgroup(meta: Meta) -> bool:
    """Whether a document is a KAI PodGroup (of any version: only ``v2alpha2`` is read)."""
    return meta.kind == KIND and meta.group == API_GROUP


def skips_podgrouper(annotations: Mapping[str, str]) -> bool:
    """Whether metadata asks KAI's podgrouper to leave its pods alone (exactly ``"true"``)."""
    return annotations.get(SKIP_PODGROUPER) == "true"


def read_podgroups(
    docs: list[Any], metas: Mapping[int, Meta], topologies: Mapping[str, TopologyDef] | None = None
) -> dict[str, PodGroupManifest]:
    """Every PodGroup of the submission (``metas``: the documents that are one) by name; ``topologies``:
    the submission's KAI Topologies. Raises ``ManifestError`` (with its document) for the first one
    muster cannot take."""
    out: dict[str, PodGroupManifest] = {}
    for index, meta in metas.items():
        try:
            manifest = read_podgroup(docs[index], meta, index, topologies)
            if manifest.name in out:
                raise ManifestError(
                    "metadata.name", f"{manifest.name!r} names another PodGroup of the submission already"
                )
        except ManifestError as exc:
            raise exc.in_document(index) from None
        out[manifest.name] = manifest
    return out


def read_podgroup(
    doc: dict[str, Any], meta: Meta, index: int = 0, topologies: Mapping[str, TopologyDef] | None = None
) -> PodGroupManifest:
    """One PodGroup document, every field checked; refused naming the field muster cannot honour."""
    if meta.api_version != f"{API_GROUP}/{VERSION}":
        raise ManifestError(
            "apiVersion", f"muster reads PodGroup {API_GROUP}/{VERSION}, got {meta.api_version!r}"
        )
    _only(doc, _DOCUMENT_FIELDS, "")
    if (why := JOB.refusal(meta.name)) is not None:
        raise ManifestError("metadata.name", why)
    if doc.get("status"):
        raise ManifestError(
            "status", "a PodGroup's status is the scheduler's to write; submit it without one"
        )
    spec = get_map(doc, _SPEC, "")
    for key in spec:
        if key in _UNHONOURED:
            raise ManifestError(join(_SPEC, key), _UNHONOURED[key])
    _only(spec, _SPEC_FIELDS, _SPEC)
    min_member = _minimum(spec, "minMember", _SPEC)
    min_subgroup = _minimum(spec, "minSubGroup", _SPEC)
    if min_member is not None and min_subgroup is not None:
        raise ManifestError(join(_SPEC, "minSubGroup"), "set minMember or minSubGroup, not both")
    subgroups = _subgroups(spec, topologies or {})
    try:
        check_tree(subgroups, min_subgroup, [], path=_SPEC)
    except SubGroupError as exc:
        raise ManifestError(_manifest_field(exc.field), exc.message) from None
    queue = get_str(spec, "queue", _SPEC) or None
    if queue is not None and (why := QUEUE.refusal(queue)) is not None:
        raise ManifestError(join(_SPEC, "queue"), why)
    pool = meta.labels.get(NODE_POOL_LABEL) or DEFAULT_POOL
    if (why := POOL.refusal(pool)) is not None:
        raise ManifestError(join(join("metadata", "labels"), NODE_POOL_LABEL), why)
    return PodGroupManifest(
        index=index,
        name=meta.name,
        pool=pool,
        queue=queue,
        priority_class=get_str(spec, "priorityClassName", _SPEC) or None,
        preemptible=_preemptibility(spec),
        min_member=min_member,
        min_subgroup=min_subgroup,
        subgroups=subgroups,
        topology=_topology(spec, _SPEC, topologies or {}),
        preemption_delay=_duration(spec, "preemptionDelay", may_be_negative=False),
        stale_gang_grace=_duration(spec, "stalenessGracePeriod", may_be_negative=True),
    )


def _only(obj: dict[str, Any], known: frozenset[str], path: str) -> None:
    for key in obj:
        if key not in known:
            raise ManifestError(join(path, str(key)), "not a field muster reads here; remove it")


def _minimum(obj: dict[str, Any], key: str, path: str) -> int | None:
    value = get_int(obj, key, path)
    if value is not None and value < 0:
        raise ManifestError(join(path, key), f"must be 0 or more, got {value}")
    return value


def _preemptibility(spec: dict[str, Any]) -> bool | None:
    value = get_str(spec, "preemptibility", _SPEC) or None
    if value is None:
        return None
    if value not in ("preemptible", "non-preemptible"):
        raise ManifestError(
            join(_SPEC, "preemptibility"), f"expected 'preemptible' or 'non-preemptible', got {value!r}"
        )
    return value == "preemptible"


def _topology(obj: dict[str, Any], path: str, topologies: Mapping[str, TopologyDef]) -> Topology | None:
    """The constraint, resolved against the submission's Topologies as a workload's annotations are
    (``metadata.resolve_topology``)."""
    tpath = join(path, "topologyConstraint")
    constraint = get_map(obj, "topologyConstraint", path)
    _only(constraint, _TOPOLOGY_FIELDS, tpath)
    keys = ("topology", "requiredTopologyLevel", "preferredTopologyLevel")
    name, required, preferred = (get_str(constraint, key, tpath) or None for key in keys)
    fields = (join(tpath, keys[0]), join(tpath, keys[1]), join(tpath, keys[2]))
    return resolve_topology(topologies, name, required, preferred, fields=fields)


def _duration(spec: dict[str, Any], key: str, *, may_be_negative: bool) -> float | None:
    text = get_str(spec, key, _SPEC)
    if text is None:
        return None
    return duration_seconds(text, join(_SPEC, key), may_be_negative=may_be_negative)


def _subgroups(spec: dict[str, Any], topologies: Mapping[str, TopologyDef]) -> tuple[SubGroup, ...]:
    """``spec.subGroups`` as the event's tree, with KAI's webhook rules on which minimum each node states;
    each sub-group's ``topologyConstraint`` is resolved as the PodGroup's is (kai-semantics.md §14.5)."""
    entries = get_list(spec, "subGroups", _SPEC)
    read: list[tuple[SubGroup, bool]] = []
    for k, raw in enumerate(entries):
        at = f"{join(_SPEC, 'subGroups')}[{k}]"
        entry = as_map(raw, at)
        _only(entry, _SUBGROUP_FIELDS, at)
        name = get_str(entry, "name", at) or ""
        if not _DNS_LABEL.fullmatch(name):
            raise ManifestError(join(at, "name"), f"expected a DNS label (a-z, 0-9, '-'), got {name!r}")
        parent = get_str(entry, "parent", at)
        min_member = _minimum(entry, "minMember", at)
        min_subgroup = _minimum(entry, "minSubGroup", at)
        if min_member is not None and min_subgroup is not None:
            raise ManifestError(join(at, "minSubGroup"), "set minMember or minSubGroup, not both")
        # KAI lower-cases a parent's name before looking it up.
        sub = SubGroup(
            name=name,
            parent=parent.lower() if parent else None,
            min_available=min_member or 0,
            min_subgroup=min_subgroup,
            topology=_topology(entry, at, topologies),
        )
        read.append((sub, min_member is not None))
    parents = {sub.parent for sub, _ in read}
    for k, (sub, has_min_member) in enumerate(read):
        at = f"{join(_SPEC, 'subGroups')}[{k}]"
        if sub.name in parents and has_min_member:
            raise ManifestError(join(at, "minMember"), "a parent sub-group counts its children (minSubGroup)")
        if sub.name not in parents and not has_min_member:
            raise ManifestError(join(at, "minMember"), "required on a leaf sub-group (0 makes it optional)")
    return tuple(sub for sub, _ in read)


def _manifest_field(field: str) -> str:
    for ours, theirs in _TREE_FIELDS:
        field = field.replace(ours, theirs)
    return field


def external_pods(
    draft: Draft, known: Mapping[str, PodGroupManifest], *, bare: bool
) -> list[tuple[str, PodTemplate]] | None:
    """The draft's pods as (PodGroup name, pod with its leaf), when they join submitted PodGroups;
    None when muster groups them by their kind's rule. ``bare``: the draft is an owner-less pod."""
    owner_skips = any(skips_podgrouper(o.annotations) for o in (*draft.owners, draft.top))
    skipped = [owner_skips or skips_podgrouper(t.annotations) for t in draft.pods]
    if bare and draft.pods and draft.pods[0].annotations.get(POD_GROUP_ANNOTATION) in known:
        skipped = [True] * len(draft.pods)
    if not any(skipped):
        return None
    if not all(skipped):
        left = draft.pods[skipped.index(False)]
        asked = draft.pods[skipped.index(True)]
        raise ManifestError(
            _annotation_path(asked, SKIP_PODGROUPER),
            f"muster takes a workload's pods into an external PodGroup all together; the pods at "
            f"{left.meta_path or 'metadata'} do not ask for it: mark the workload itself",
        )
    return [_joining(t, known) for t in draft.pods]


def _annotation_path(template: PodTemplate, key: str) -> str:
    return join(join(template.meta_path or "metadata", "annotations"), key)


def _joining(template: PodTemplate, known: Mapping[str, PodGroupManifest]) -> tuple[str, PodTemplate]:
    where = _annotation_path(template, POD_GROUP_ANNOTATION)
    name = template.annotations.get(POD_GROUP_ANNOTATION)
    if not name:
        raise ManifestError(
            where,
            f"a pod the podgrouper leaves alone ({SKIP_PODGROUPER}) must name its PodGroup here, and the "
            f"PodGroup ({API_GROUP}/{VERSION}) must be submitted with it",
        )
    group = known.get(name)
    if group is None:
        raise ManifestError(
            where,
            f"names no PodGroup of the submission: {name!r} (muster has no cluster PodGroups to look up; "
            f"submit the {API_GROUP}/{VERSION} PodGroup in the same file)",
        )
    leaf = template.labels.get(SUBGROUP_LABEL, "")
    label = join(join(template.meta_path or "metadata", "labels"), SUBGROUP_LABEL)
    if group.subgroups and leaf not in group.leaves:
        said = f"names {leaf!r}, which is not" if leaf else "is needed: a pod must name"
        raise ManifestError(label, f"{said} a leaf sub-group of PodGroup {name!r}: {sorted(group.leaves)}")
    if not group.subgroups and leaf:
        raise ManifestError(label, f"PodGroup {name!r} has no sub-groups to join")
    return name, template.with_pod(subgroup=leaf)


def podgroup_created(
    group: PodGroupManifest,
    pods: list[PodTemplate],
    *,
    priority_values: dict[str, int],
    submitted_at: float,
    uid: str,
    queue_override: str | None,
) -> PodGroupCreated:
    """The ``PodGroupCreated`` of a submitted PodGroup and the pods that joined it (in the PodGroup's
    document's terms: a refusal names its field)."""
    if not pods:
        raise ManifestError(
            "metadata.name", f"no pod of the submission names {group.name!r} ({POD_GROUP_ANNOTATION})"
        )
    queue = queue_override or group.queue
    if queue is None:
        raise ManifestError(join(_SPEC, "queue"), "required: the PodGroup's queue decides where its pods run")
    count = sum(t.pod.count for t in pods)
    if group.subgroups:
        _check_leaves_fill(group, pods)
        # As in KAI, the tree decides; the root's minMember only counts without sub-groups.
        min_available = (
            group.min_member
            if group.min_member is not None
            else sum(s.min_available for s in group.subgroups if s.name in group.leaves)
        )
    else:
        min_available = 1 if group.min_member is None else group.min_member
        if min_available > count:
            raise ManifestError(
                join(_SPEC, "minMember"),
                f"{min_available} is more than the {count} pods that name this PodGroup",
            )
    cls = group.priority_class
    # KAI's scheduler gives a PodGroup without a known class the default priority (50, train's value).
    priority = (
        priority_values.get(cls, PRIORITY_CLASSES.get(cls, UNKNOWN_CLASS_PRIORITY))
        if cls
        else UNKNOWN_CLASS_PRIORITY
    )
    return PodGroupCreated(
        name=group.name,
        queue=queue,
        kind=KIND,
        pool=group.pool,
        priority_class=cls,
        priority=priority,
        preemptible=group.preemptible if group.preemptible is not None else priority < 100,
        min_available=min_available,
        submitted_at=submitted_at,
        pods=[t.pod for t in pods],
        subgroups=list(group.subgroups),
        min_subgroup=group.min_subgroup,
        topology=group.topology,
        workload_uid=uid,
        runtime=runtimes.IMAGE if any(t.image for t in pods) else runtimes.SIMULATED,
        preemption_delay=group.preemption_delay,
        stale_gang_grace=group.stale_gang_grace,
    )


def _check_leaves_fill(group: PodGroupManifest, pods: list[PodTemplate]) -> None:
    """A leaf needing more pods than name it could never be satisfied (KAI would wait for ever)."""
    have: dict[str, int] = {}
    for t in pods:
        have[t.pod.subgroup] = have.get(t.pod.subgroup, 0) + t.pod.count
    for k, sub in enumerate(group.subgroups):
        if sub.name in group.leaves and sub.min_available > have.get(sub.name, 0):
            raise ManifestError(
                f"{join(_SPEC, 'subGroups')}[{k}].minMember",
                f"{sub.min_available} is more than the {have.get(sub.name, 0)} pods in leaf {sub.name!r}",
            )
