"""The podgrouper's public entry point: manifests in, ``PodGroupCreated`` events out.

A submission is a list of documents that belong together. Some are context, not
workloads: ConfigMaps, Services, Queues, PriorityClasses (whose values name
priorities), training runtimes and workflow templates (which shape the workload
referring to them), Topologies and DRA ResourceClaimTemplates (whose GPUs the
pods naming them claim: ``dra_claims``). A document owned (``metadata.ownerReferences``) by another
document of the batch is grouped with its top owner, as KAI walks owners: a pod
owned by a bare pod (a Spark executor) joins that pod's group; anything else is
already described by its owner's templates. Everything else is grouped by the
plugin the registry names for its apiVersion/kind.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import msgspec

from muster import bounds, runtimes
from muster.events import PodGroupCreated, TopologyDeclared
from muster.grouping.dra_claims import with_claimed_gpus
from muster.grouping.errors import ManifestError
from muster.grouping.external_podgroup import external_pods, is_podgroup, podgroup_created, read_podgroups
from muster.grouping.fields import as_map, join
from muster.grouping.limits import MAX_CREATED_DEPTH, MAX_PODS, check_count
from muster.grouping.metadata import finish
from muster.grouping.model import Batch, Context, Draft, Meta, PodTemplate, object_meta
from muster.grouping.nesting import check_depth
from muster.grouping.registry import REGISTRY, Registry
from muster.held_topologies import declarations
from muster.names import JOB, QUEUE, quoted
from muster.topologies import TopologyDef

# Kinds that never run pods themselves; skipped unless a workload refers to them.
CONTEXT_KINDS = {
    ("", "ConfigMap"),
    ("", "Secret"),
    ("", "Service"),
    ("", "ServiceAccount"),
    ("", "Namespace"),
    ("", "PersistentVolumeClaim"),
    ("scheduling.k8s.io", "PriorityClass"),
    ("scheduling.run.ai", "Queue"),
    ("kai.scheduler", "Topology"),
    ("resource.k8s.io", "ResourceClaimTemplate"),
    ("trainer.kubeflow.org", "ClusterTrainingRuntime"),
    ("trainer.kubeflow.org", "TrainingRuntime"),
    ("argoproj.io", "WorkflowTemplate"),
    ("argoproj.io", "ClusterWorkflowTemplate"),
    ("rbac.authorization.k8s.io", "Role"),
    ("rbac.authorization.k8s.io", "RoleBinding"),
    ("rbac.authorization.k8s.io", "ClusterRole"),
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"),
}


# Most documents are workloads: their kind alone rules them out, without splitting the apiVersion.
_CONTEXT_KIND_NAMES = {kind for _, kind in CONTEXT_KINDS}


def _is_context(meta: Meta) -> bool:
    return meta.kind in _CONTEXT_KIND_NAMES and (meta.group, meta.kind) in CONTEXT_KINDS


def _owner(doc: dict[str, Any], index: int, names: dict[tuple[str, str], int]) -> int | None:
    """Index of the batch document this one's first ownerReference names, if any."""
    meta = doc.get("metadata")
    if not isinstance(meta, dict):
        return None
    refs = meta.get("ownerReferences")
    if not isinstance(refs, list) or not refs or not isinstance(refs[0], dict):
        return None
    ref = refs[0]
    target = names.get((str(ref.get("kind")), str(ref.get("name"))))
    return target if target != index else None


def _top_owners(docs: list[dict[str, Any]]) -> list[int]:
    """For each document, the index of its top owner within the batch (itself if none)."""
    names: dict[tuple[str, str], int] = {}
    for i, doc in enumerate(docs):
        meta = doc.get("metadata")
        if isinstance(meta, dict) and meta.get("name"):
            names.setdefault((str(doc.get("kind")), str(meta["name"])), i)
    tops = []
    for i, doc in enumerate(docs):
        parent = _owner(doc, i, names)
        tops.append(i if parent is None else _climb(docs, i, parent, names))
    return tops


def _climb(
    docs: list[dict[str, Any]], index: int, parent: int | None, names: dict[tuple[str, str], int]
) -> int:
    """The top owner of document ``index``, whose owner is ``parent``; a cycle stops where it closes."""
    current, seen = index, {index}
    while parent is not None and parent not in seen:
        seen.add(parent)
        current = parent
        parent = _owner(docs[current], current, names)
    return current


def _owned(doc: dict[str, Any]) -> bool:
    """Whether the document names an owner (KAI treats only an owner-less pod as the user's own)."""
    meta = doc.get("metadata")
    return isinstance(meta, dict) and bool(meta.get("ownerReferences"))


def _podgroup_metas(docs: list[Any], uid: str) -> dict[int, Meta]:
    """The submitted KAI PodGroups, by document: read before any pod, which may name one."""
    out: dict[int, Meta] = {}
    for i, doc in enumerate(docs):
        if isinstance(doc, dict) and doc.get("kind") == "PodGroup":
            try:
                meta = object_meta(doc, "", uid=uid)
            except ManifestError as exc:
                raise exc.in_document(i) from None
            if is_podgroup(meta):
                out[i] = meta
    return out


def _pods(result: Draft | PodGroupCreated) -> int:
    if isinstance(result, Draft):
        return result.pod_count
    specs = result.pods
    return specs[0].count if len(specs) == 1 else sum(p.count for p in specs)


class _Grouping:
    def __init__(self, batch: Batch, uid: str, registry: Registry) -> None:
        self.batch = batch
        self.uid = uid
        self.registry = registry
        self.depth = 0
        """How many objects being grouped created the one being grouped now."""

    def group_object(
        self, obj: dict[str, Any], path: str, *, inherited: Meta | None = None, meta: Meta | None = None
    ) -> list[Draft]:
        """The drafts of one object; ``inherited`` is a skipped top owner's metadata, ``meta`` the
        object's own when the caller has read it already."""
        if self.depth >= MAX_CREATED_DEPTH:
            raise ManifestError(path, f"objects create objects more than {MAX_CREATED_DEPTH} levels deep")
        meta = meta or object_meta(obj, path, uid=self.uid)
        if inherited is not None:
            meta = meta.merged(inherited.labels, inherited.annotations)
        entry = self.registry.lookup(meta.api_version, meta.kind)
        ctx = Context(batch=self.batch, uid=self.uid, group_object=self.group_object, inherited=inherited)
        self.depth += 1
        try:
            results = entry.grouper(obj, path, meta, ctx)
        finally:
            self.depth -= 1
        # Plugins bound each count they read; this bounds what the counts add up to.
        count = _pods(results[0]) if len(results) == 1 else sum(map(_pods, results))
        if count > MAX_PODS:
            check_count(count, join(path, "spec"))
        return results


def _check_own_name(doc: dict[str, Any], meta: Meta) -> None:
    """A workload's own name follows Kubernetes' rule for it (the field that gave it is named)."""
    if JOB.fits(meta.name):
        return
    why = JOB.refusal(meta.name)
    given = isinstance(doc.get("metadata"), dict) and doc["metadata"].get("name")
    raise ManifestError("metadata.name" if given else "metadata.generateName", why)


def _check_job_name(event: PodGroupCreated, meta: Meta) -> None:
    """A job name made from the workload's (a suffix per pod, a step's name) follows the rule too."""
    why = JOB.problem(event.name)
    if why is not None:
        raise ManifestError(
            "metadata.name", f"{quoted(meta.name)} makes the job name {quoted(event.name)}, which {why}"
        )


def _check_bounds(event: PodGroupCreated) -> None:
    """Refuse a group the bus would refuse, so the submission is rejected instead of lost.

    Plugins name the manifest field for the bounds they can see (counts, minimums), and grouping
    the names it reads; this catches the rest (a PriorityClass value past int32, a pod asking
    10**12 GPUs, a name a plugin registered from outside made)."""
    try:
        bounds.check_pod_group(event)
    except bounds.OutOfBounds as exc:
        field = exc.path.removeprefix("$.")
        raise ManifestError("", f"group {event.name!r} field {field}: {exc.message}") from None


def _merge(events: list[PodGroupCreated]) -> list[PodGroupCreated]:
    """Bare pods that share a group name (a Spark app, a user's pod-group-name) become one group."""
    out: list[PodGroupCreated] = []
    by_name: dict[str, int] = {}
    for event in events:
        if event.kind == "Pod" and event.name in by_name:
            i = by_name[event.name]
            # a pod that names an image makes the group one that needs a node that runs images
            runtime = event.runtime if event.runtime == runtimes.IMAGE else out[i].runtime
            out[i] = msgspec.structs.replace(out[i], pods=[*out[i].pods, *event.pods], runtime=runtime)
            continue
        by_name.setdefault(event.name, len(out))
        out.append(event)
    return out


@dataclass(frozen=True)
class Grouped:
    """What a submission makes: its pod groups, and the KAI Topologies it declares to the system."""

    groups: list[PodGroupCreated]
    declared: list[TopologyDeclared]


def group_manifests(
    docs: list[dict[str, Any]],
    *,
    submitted_at: float = 0.0,
    uid: str = "",
    queue_override: str | None = None,
    registry: Registry | None = None,
    nesting_bounded: bool = False,
    held: Mapping[str, TopologyDef] | None = None,
) -> list[PodGroupCreated]:
    """The pod groups a submission makes, in document order, then the submitted KAI PodGroups
    (``external_podgroup``) with the pods that name them.

    Raises ``ManifestError`` naming the field path (and the document, when there
    are several) for a manifest that cannot be grouped, or when no document of
    the submission runs any pod. ``nesting_bounded`` says the caller has already
    refused documents nested past ``limits.MAX_DEPTH`` (a reader's admission does).
    ``held``: the KAI Topologies the system holds, which constraints may name besides the submission's.
    """
    events, batch = _group(docs, submitted_at, uid, queue_override, registry, nesting_bounded, held or {})
    if not events and batch.own_topologies():
        raise ManifestError(
            "",
            "a Topology alone makes no pod group: `muster submit` it to the running system, which holds "
            "it for the workloads that name it later",
        )
    if not events:
        _refuse_nothing_to_run(batch)
    return events


def group_and_declare(
    docs: list[dict[str, Any]],
    *,
    held: Mapping[str, TopologyDef],
    submitted_at: float = 0.0,
    uid: str = "",
    queue_override: str | None = None,
    nesting_bounded: bool = False,
) -> Grouped:
    """``group_manifests`` for the system that holds ``held``: the submission's KAI Topologies are
    declared to it (``held_topologies.declarations``), so a submission of Topologies alone is one."""
    events, batch = _group(docs, submitted_at, uid, queue_override, None, nesting_bounded, held)
    own = batch.own_topologies()
    if not events and not own:
        _refuse_nothing_to_run(batch)
    return Grouped(events, declarations(held, own, uid) if own else [])


def _refuse_nothing_to_run(batch: Batch) -> None:
    """A submission that makes no pod group: what it lacks, in words."""
    if batch.claim_templates():
        raise ManifestError(
            "",
            "a ResourceClaimTemplate is read with the workloads that name it: submit them in one file "
            "(muster holds none)",
        )
    raise ManifestError("", "no document in the submission runs any pod")


def _group(
    docs: list[dict[str, Any]],
    submitted_at: float,
    uid: str,
    queue_override: str | None,
    registry: Registry | None,
    nesting_bounded: bool,
    held: Mapping[str, TopologyDef],
) -> tuple[list[PodGroupCreated], Batch]:
    if not isinstance(docs, list) or not docs:
        raise ManifestError("", "expected at least one manifest")
    many = len(docs) > 1
    if queue_override and (why := QUEUE.refusal(queue_override)) is not None:
        raise ManifestError("queue", why)
    if not nesting_bounded:
        # Every document first: a plugin may read any of them (a runtime, a template) recursively.
        for i, doc in enumerate(docs):
            try:
                check_depth(doc)
            except ManifestError as exc:
                raise (exc.in_document(i) if many else exc) from None
    batch = Batch(docs=tuple(docs), held=held)
    grouping = _Grouping(batch, uid, registry or REGISTRY)
    priorities = batch.priority_values()
    try:
        topologies = batch.topologies()
        claim_templates = batch.claim_templates()
    except ManifestError as exc:
        raise (exc if many else ManifestError(exc.path, exc.message)) from None
    tops = _top_owners([d if isinstance(d, dict) else {} for d in docs])
    podgroups = read_podgroups(docs, _podgroup_metas(docs, uid), topologies)
    joined: dict[str, list[PodTemplate]] = {name: [] for name in podgroups}
    events: list[PodGroupCreated] = []
    pod_group_of: dict[int, str] = {}
    pods = 0
    for i, doc in enumerate(docs):
        try:
            doc = as_map(doc, "")
            meta = object_meta(doc, "", uid=uid)
            if _is_context(meta) or is_podgroup(meta):
                continue
            _check_own_name(doc, meta)
            top = tops[i]
            if top != i and (docs[top].get("kind") != "Pod" or meta.kind != "Pod"):
                continue  # described by its top owner's templates
            results = grouping.group_object(doc, "", meta=meta)
            for result in results:
                if isinstance(result, Draft):
                    result = with_claimed_gpus(result, claim_templates)
                    bare = meta.kind == "Pod" and not meta.group and not _owned(doc)
                    members = external_pods(result, podgroups, bare=bare)
                    if members is not None:
                        for name, template in members:
                            joined[name].append(template)
                            pods += template.pod.count
                        continue
                if isinstance(result, PodGroupCreated):
                    event = msgspec.structs.replace(
                        result,
                        # A plugin's own submitted_at is an offset within the submission
                        # (the muster job kind's scenario field); others leave it 0.
                        submitted_at=submitted_at + result.submitted_at,
                        workload_uid=uid,
                        queue=queue_override or result.queue,
                    )
                    # A plugin's finished group is within bounds already (``model.Grouper``); of what
                    # was replaced, the queue override is checked above and the uid is bounded here.
                    bounded = len(uid) <= bounds.MAX_UID
                else:
                    event = finish(
                        result,
                        priority_values=priorities,
                        submitted_at=submitted_at,
                        uid=uid,
                        queue_override=queue_override,
                        topologies=topologies,
                    )
                    bounded = False
                if top != i and top in pod_group_of:
                    event = msgspec.structs.replace(event, name=pod_group_of[top])
                if event.name != meta.name:  # the workload's own name is checked above
                    _check_job_name(event, meta)
                if not bounded:
                    _check_bounds(event)
                pod_group_of.setdefault(i, event.name)
                events.append(event)
                pods += _pods(event)
            if pods > MAX_PODS:
                raise ManifestError(
                    "", f"the submission makes {pods} pods, more than the {MAX_PODS} a workload may have"
                )
        except ManifestError as exc:
            raise (exc.in_document(i) if many else exc) from None
    events = _merge(events)
    taken = {event.name for event in events}
    for name, group in podgroups.items():
        try:
            if name in taken:
                raise ManifestError("metadata.name", f"{name!r} is also the name of a group muster made here")
            event = podgroup_created(
                group,
                joined[name],
                priority_values=priorities,
                submitted_at=submitted_at,
                uid=uid,
                queue_override=queue_override,
            )
            _check_bounds(event)
        except ManifestError as exc:
            raise (exc.in_document(group.index) if many else exc) from None
        events.append(event)
    return events, batch
