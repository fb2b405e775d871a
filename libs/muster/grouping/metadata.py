"""Queue, priority, preemptibility, pool and topology: KAI's default resolution.

Every plugin's ``Draft`` passes through ``finish``. The rules (from KAI's
default grouper) in short:

- queue: ``kai.scheduler/queue`` on the top owner, then the pod; then the
  older ``runai/queue`` the same way; then a ``project`` label (``<project>-<pool>``
  when the pod names a node pool); else ``default-queue``, KAI's fallback, which
  the queue-controller creates on a system that has no queues.
- priority class: walking the owners from the pod's direct owner up, the first of
  the owner's ``priorityClassName`` label, the pod's label, the pod's
  ``spec.priorityClassName``; else the plugin's fallback. KAI only accepts a name
  that exists as a PriorityClass; muster cannot see the cluster, so it accepts any
  name, takes its value from a ``PriorityClass`` document in the batch or KAI's
  defaults, and gives an unknown name priority 50 (train's value).
- preemptible: a ``kai.scheduler/preemptibility`` label on an owner, then the pod;
  else priority < 100.
- preemption delay and stale-gang grace (KAI v0.17): the Go durations in the
  annotations ``kai.scheduler/preemption-delay`` and
  ``kai.scheduler/staleness-grace-period``, on the owners from the pod's direct
  owner up (the object grouped, with a skipped top owner's annotations), then the
  pod; the first found counts (``muster.grouping.timing`` reads them).
- runtime (muster's own): ``image`` when a container of a pod names an image, else
  ``simulated`` (see ``muster.runtimes``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import msgspec

from muster import runtimes
from muster.events import PodGroupCreated, SubGroup, Topology
from muster.grouping.errors import ManifestError
from muster.grouping.fields import join
from muster.grouping.model import AnnotatedConstraint, Draft, Meta
from muster.grouping.timing import PREEMPTION_DELAY, STALENESS_GRACE, annotated_seconds
from muster.names import POOL, QUEUE, Rule
from muster.queues.default import DEFAULT_QUEUE
from muster.topologies import TopologyDef, TopologyError, constraint

QUEUE_LABEL = "kai.scheduler/queue"
LEGACY_QUEUE_LABEL = "runai/queue"
PROJECT_LABEL = "project"
NODE_POOL_LABEL = "kai.scheduler/node-pool"
PRIORITY_LABEL = "priorityClassName"
PREEMPTIBILITY_LABEL = "kai.scheduler/preemptibility"
TOPOLOGY_ANNOTATION = "kai.scheduler/topology"
REQUIRED_PLACEMENT = "kai.scheduler/topology-required-placement"
PREFERRED_PLACEMENT = "kai.scheduler/topology-preferred-placement"
SEGMENT_REQUIRED_PLACEMENT = "kai.scheduler/segment-topology-required-placement"
SEGMENT_PREFERRED_PLACEMENT = "kai.scheduler/segment-topology-preferred-placement"
DEFAULT_POOL = "default"
UNKNOWN_CLASS_PRIORITY = 50

PRIORITY_CLASSES = {"train": 50, "build-preemptible": 75, "build": 100, "inference": 125}


def _named_by_label(rule: Rule, value: str, label: str) -> str:
    """``value``, read from ``label``, if it is a valid name of ``rule``'s kind; else refused naming the label."""
    why = rule.refusal(value)
    if why is not None:
        raise ManifestError(join(join("metadata", "labels"), label), why)
    return value


def _queue(draft: Draft, pod_labels: dict[str, str]) -> str:
    for key in (QUEUE_LABEL, LEGACY_QUEUE_LABEL):
        for labels in (draft.top.labels, pod_labels):
            if labels.get(key):
                return _named_by_label(QUEUE, labels[key], key)
    project = draft.top.labels.get(PROJECT_LABEL) or pod_labels.get(PROJECT_LABEL)
    if project:
        pool = pod_labels.get(NODE_POOL_LABEL)
        return _named_by_label(QUEUE, f"{project}-{pool}" if pool else project, PROJECT_LABEL)
    return DEFAULT_QUEUE


def _priority_class(draft: Draft, pod_labels: dict[str, str], pod_spec_class: str | None) -> str:
    if draft.priority_class:
        return draft.priority_class
    pod_side = [pod_labels.get(PRIORITY_LABEL), pod_spec_class]
    owners: tuple[Meta, ...] = (draft.top,) if draft.priority_scope == "top" else draft.owners
    for owner in owners or (Meta("", "", ""),):
        for candidate in [owner.labels.get(PRIORITY_LABEL), *pod_side]:
            if candidate:
                return candidate
    return draft.priority_fallback


def _preemptible(draft: Draft, pod_labels: dict[str, str], priority: int, path: str) -> bool:
    for labels in [*(o.labels for o in draft.owners), draft.top.labels, pod_labels]:
        value = labels.get(PREEMPTIBILITY_LABEL)
        if value is None:
            continue
        if value == "preemptible":
            return True
        if value == "non-preemptible":
            return False
        raise ManifestError(
            join(join(path, "labels"), PREEMPTIBILITY_LABEL),
            f"expected 'preemptible' or 'non-preemptible', got {value!r}",
        )
    return priority < 100


def _topology(draft: Draft, topologies: Mapping[str, TopologyDef]) -> Topology | None:
    if draft.topology != "auto":
        return draft.topology
    notes = draft.top.annotations
    at = join("metadata", "annotations")
    return resolve_topology(
        topologies,
        notes.get(TOPOLOGY_ANNOTATION),
        notes.get(REQUIRED_PLACEMENT),
        notes.get(PREFERRED_PLACEMENT),
        fields=(join(at, TOPOLOGY_ANNOTATION), join(at, REQUIRED_PLACEMENT), join(at, PREFERRED_PLACEMENT)),
    )


def resolve_topology(
    topologies: Mapping[str, TopologyDef],
    name: str | None,
    required: str | None,
    preferred: str | None,
    *,
    fields: tuple[str, str, str],
) -> Topology | None:
    """A workload's constraint (``fields``: where its name, required and preferred level were read).

    When the submission carries KAI Topology documents, the name must be one of them and the levels its
    levels or aliases (``muster.topologies``), refused naming the field otherwise. A submission without
    any reads the levels as node labels on their own, as before muster read Topologies: it holds no
    cluster-wide Topology to check the name against."""
    if not topologies or not name:
        if not required and not preferred:
            return None
        return Topology(required=required or None, preferred=preferred or None)
    try:
        return constraint(topologies, name, required, preferred, fields=fields)
    except TopologyError as exc:
        raise ManifestError(exc.field, exc.message) from None


def _timing(draft: Draft, pod_annotations: dict[str, str], key: str) -> float | None:
    """The annotation ``key`` on the nearest owner that has it, else on the pod (checked when read)."""
    for owner in (*draft.owners, draft.top):
        if key in owner.annotations:
            return annotated_seconds(owner.annotations, key, "metadata")
    return annotated_seconds(pod_annotations, key, "metadata")


def _runtime(draft: Draft) -> str:
    # Images are what a manifest runs; one that names none has nothing a node could start, and only
    # the simulated fleet can hold it.
    return runtimes.IMAGE if any(t.image for t in draft.pods) else runtimes.SIMULATED


def annotated_constraint(
    names: Sequence[tuple[Mapping[str, str], str]],
    levels: Mapping[str, str],
    lpath: str,
    keys: tuple[str, str] = (REQUIRED_PLACEMENT, PREFERRED_PLACEMENT),
) -> AnnotatedConstraint | None:
    """A sub-group's own constraint from annotations (podgrouper-rules.md §4.6, §4.9, §4.11): the topology
    name from the first of ``names`` ((annotations, their path)) that has one, the required and
    preferred levels (``keys``) from ``levels`` at ``lpath``. KAI gives the sub-group none unless the
    name and at least one level are there, so neither does this."""
    found = next(
        ((notes[TOPOLOGY_ANNOTATION], at) for notes, at in names if notes.get(TOPOLOGY_ANNOTATION)), None
    )
    required, preferred = (levels.get(key) or None for key in keys)
    if found is None or (required is None and preferred is None):
        return None
    name, npath = found
    return AnnotatedConstraint(
        name,
        required,
        preferred,
        (join(npath, TOPOLOGY_ANNOTATION), join(lpath, keys[0]), join(lpath, keys[1])),
    )


def segment_constraint(
    worker: Mapping[str, str], wpath: str, top: Mapping[str, str]
) -> AnnotatedConstraint | None:
    """The constraint every segment of a PyTorchJob's or LeaderWorkerSet's workers gets (podgrouper-rules.md
    §4.6, §4.11): the ``segment-topology-*-placement`` levels on the worker template (annotations
    ``worker`` at ``wpath``), the topology name there or else on the top owner (``top``)."""
    return annotated_constraint(
        [(worker, wpath), (top, join("metadata", "annotations"))],
        worker,
        wpath,
        (SEGMENT_REQUIRED_PLACEMENT, SEGMENT_PREFERRED_PLACEMENT),
    )


def _subgroups(draft: Draft, topologies: Mapping[str, TopologyDef]) -> list[SubGroup]:
    """The draft's sub-groups, each constrained one with its constraint resolved as the group's is."""
    own = dict(draft.subgroup_topologies)
    out = []
    for sub in draft.subgroups:
        given = own.get(sub.name)
        if given is not None:
            topo = resolve_topology(
                topologies, given.name, given.required, given.preferred, fields=given.fields
            )
            sub = msgspec.structs.replace(sub, topology=topo)
        out.append(sub)
    return out


def finish(
    draft: Draft,
    *,
    priority_values: dict[str, int],
    submitted_at: float,
    uid: str,
    queue_override: str | None,
    topologies: Mapping[str, TopologyDef] | None = None,
) -> PodGroupCreated:
    """The ``PodGroupCreated`` event for one draft; ``topologies``: the submission's KAI Topologies."""
    first = draft.pods[0] if draft.pods else None
    pod_labels = first.labels if first else {}
    pod_annotations = first.annotations if first else {}
    pod_class = first.priority_class_name if first else None
    priority_class = _priority_class(draft, pod_labels, pod_class)
    priority = priority_values.get(
        priority_class, PRIORITY_CLASSES.get(priority_class, UNKNOWN_CLASS_PRIORITY)
    )
    pool = draft.top.labels.get(NODE_POOL_LABEL) or pod_labels.get(NODE_POOL_LABEL)
    pool = _named_by_label(POOL, pool, NODE_POOL_LABEL) if pool else DEFAULT_POOL
    return PodGroupCreated(
        name=draft.name,
        queue=queue_override or _queue(draft, pod_labels),
        kind=draft.kind,
        pool=pool,
        priority_class=priority_class,
        priority=priority,
        preemptible=_preemptible(draft, pod_labels, priority, "metadata"),
        min_available=draft.min_available,
        submitted_at=submitted_at,
        pods=[t.pod for t in draft.pods],
        subgroups=_subgroups(draft, topologies or {}),
        min_subgroup=draft.min_subgroup,
        topology=_topology(draft, topologies or {}),
        workload_uid=uid,
        runtime=_runtime(draft),
        preemption_delay=_timing(draft, pod_annotations, PREEMPTION_DELAY),
        stale_gang_grace=_timing(draft, pod_annotations, STALENESS_GRACE),
    )
