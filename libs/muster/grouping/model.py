"""The data a grouper plugin works with and returns.

A plugin reads one object (the top owner, in KAI's terms) and returns
``Draft``s: the pod groups it makes, with the pods each will hold and the
objects whose labels decide queue, priority and preemptibility. ``metadata``
then resolves those the same way for every kind.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from types import MappingProxyType
from typing import Any, Literal, Protocol

import msgspec

from muster.events import PodGroupCreated, PodSpec, SubGroup, Topology
from muster.grouping.dra_claims import ClaimTemplate, PodClaim, pod_claims, read_templates
from muster.grouping.errors import ManifestError
from muster.grouping.fields import as_map, get_map, get_str, join, string_map
from muster.grouping.podspec import build_pod_spec, names_an_image
from muster.grouping.timing import check_timing_annotations
from muster.topologies import TopologyDef, TopologyError, check_update, is_topology_manifest
from muster.topologies import read_manifest as read_topology


class Meta(msgspec.Struct, frozen=True):
    """An object's identity and metadata (the top owner, or an implicit owner).

    A struct rather than a dataclass: one is built for every manifest, and a
    frozen dataclass costs several times as much to build."""

    api_version: str
    kind: str
    name: str
    labels: dict[str, str] = {}
    annotations: dict[str, str] = {}

    @property
    def group(self) -> str:
        return self.api_version.rpartition("/")[0]

    def merged(self, labels: dict[str, str], annotations: dict[str, str]) -> Meta:
        """This object with extra labels and annotations; its own keys win."""
        return msgspec.structs.replace(
            self, labels={**labels, **self.labels}, annotations={**annotations, **self.annotations}
        )


IMPLICIT = Meta(api_version="", kind="", name="")
"""An owner the workload's controller creates with no labels of its own (a ReplicaSet)."""


def object_meta(obj: dict[str, Any], path: str, *, uid: str = "") -> Meta:
    """The identity of a top-level manifest. ``generateName`` gets a suffix derived
    from ``uid`` (so the same submission always gets the same name); with neither a
    name nor a generateName, the lower-cased kind serves as generateName."""
    api_version = get_str(obj, "apiVersion", path)
    kind = get_str(obj, "kind", path)
    if not api_version:
        raise ManifestError(join(path, "apiVersion"), "required field is missing")
    if not kind:
        raise ManifestError(join(path, "kind"), "required field is missing")
    mpath = join(path, "metadata")
    meta = get_map(obj, "metadata", path)
    name = get_str(meta, "name", mpath)
    if not name:
        prefix = get_str(meta, "generateName", mpath) or f"{kind.lower()}-"
        name = prefix + hashlib.sha256(f"{uid}/{prefix}".encode()).hexdigest()[:5]
    return Meta(
        api_version=api_version,
        kind=kind,
        name=name,
        labels=string_map(meta, "labels", mpath),
        annotations=string_map(meta, "annotations", mpath),
    )


def nested_meta(obj: dict[str, Any], path: str, *, kind: str = "", name: str = "") -> Meta:
    """Metadata of an embedded object (a ``jobTemplate``, a Knative revision template)."""
    mpath = join(path, "metadata")
    meta = get_map(obj, "metadata", path)
    return Meta(
        api_version="",
        kind=kind,
        name=get_str(meta, "name", mpath) or name,
        labels=string_map(meta, "labels", mpath),
        annotations=string_map(meta, "annotations", mpath),
    )


@dataclass(frozen=True)
class PodTemplate:
    """``pod.count`` identical pods, with the labels and spec fields grouping reads."""

    pod: PodSpec
    labels: dict[str, str]
    annotations: dict[str, str]
    priority_class_name: str | None
    image: bool = False
    """Whether a container of the pod names an image: then only a node that runs images can run it."""
    meta_path: str = ""
    """Where the pod's metadata sits in the manifest (``spec.template.metadata``): refusals of its
    labels and annotations name it."""
    claims: tuple[PodClaim, ...] = ()
    """DRA claims the pod makes from templates, until ``dra_claims.with_claimed_gpus`` adds their GPUs to
    ``pod`` (the templates travel in the batch, which a plugin's pod templates are read without)."""

    def with_pod(self, **changes: Any) -> PodTemplate:
        return replace(self, pod=msgspec.structs.replace(self.pod, **changes))


def pod_template(
    template: Any,
    path: str,
    *,
    role: str,
    count: int,
    subgroup: str = "",
    spec_key: str | None = "spec",
    controller_labels: dict[str, str] | None = None,
    metadata: tuple[Meta, str] | None = None,
) -> PodTemplate:
    """Read a Kubernetes pod template (``{metadata, spec}``) at ``path``.

    With ``spec_key=None`` the mapping at ``path`` is the pod spec itself, and ``metadata`` (labels and
    annotations, and the path of the object holding them) what stands for its template's metadata. The
    pods carry ``controller_labels`` (``muster.grouping.controller_labels``) under the template's own labels.
    """
    template = as_map(template, path)
    if spec_key is None:
        spec, spath = template, path
        meta, meta_path = metadata or (Meta("", "", ""), path)
    else:
        spath = join(path, spec_key)
        if template.get(spec_key) is None:
            raise ManifestError(spath, "required field is missing")
        spec = as_map(template[spec_key], spath)
        meta = nested_meta(template, path)
        meta_path = join(path, "metadata")
    check_timing_annotations(meta.annotations, meta_path)
    return PodTemplate(
        pod=build_pod_spec(
            spec,
            meta.annotations,
            spath,
            role=role,
            count=count,
            subgroup=subgroup,
            meta_path=meta_path,
            labels={**controller_labels, **meta.labels} if controller_labels else meta.labels,
        ),
        labels=meta.labels,
        annotations=meta.annotations,
        priority_class_name=get_str(spec, "priorityClassName", spath),
        image=names_an_image(spec),
        meta_path=meta_path,
        claims=pod_claims(spec, spath),
    )


@dataclass(frozen=True)
class AnnotatedConstraint:
    """A sub-group's own topology constraint as a workload's annotations state it (a topology name and at
    least one level), resolved against the submission's Topologies when the group is finished."""

    name: str
    required: str | None
    preferred: str | None
    fields: tuple[str, str, str]
    """Where the name, the required and the preferred level were read: refusals name them."""


@dataclass(frozen=True)
class Draft:
    """One pod group as a plugin sees it, before queue and priority are resolved."""

    name: str
    kind: str
    top: Meta
    """Whose labels and annotations name the queue, pool and topology (KAI's top owner)."""
    owners: tuple[Meta, ...]
    """The pod's owners from its direct owner upward; priority and preemptibility labels."""
    pods: tuple[PodTemplate, ...]
    min_available: int
    subgroups: tuple[SubGroup, ...] = ()
    min_subgroup: int | None = None
    """How many top-level sub-groups must be satisfied; None: all (kai-semantics.md §14.1)."""
    priority_fallback: str = "train"
    priority_scope: Literal["chain", "top"] = "chain"
    """``chain``: every owner's label is consulted (KAI's default); ``top``: the top owner only."""
    priority_class: str | None = None
    """Set by a plugin whose rule overrides the usual resolution (Ray's label)."""
    topology: Topology | None | Literal["auto"] = "auto"
    """``auto``: read KAI's topology annotations on ``top``."""
    subgroup_topologies: tuple[tuple[str, AnnotatedConstraint], ...] = ()
    """(sub-group name, its own constraint) for the sub-groups the workload constrains (§4.17)."""

    @property
    def pod_count(self) -> int:
        return sum(t.pod.count for t in self.pods)


@dataclass(frozen=True)
class Batch:
    """Every document submitted together: some are context (runtimes, PriorityClasses)."""

    docs: tuple[dict[str, Any], ...]
    held: Mapping[str, TopologyDef] = field(default_factory=dict)
    """The KAI Topologies the system holds (``muster.held_topologies``): later submissions may name them."""

    def find(self, kinds: Sequence[str], name: str) -> tuple[int, dict[str, Any]] | None:
        """The first document of one of ``kinds`` named ``name``, with its index."""
        for i, doc in enumerate(self.docs):
            meta = doc.get("metadata") if isinstance(doc, dict) else None
            if isinstance(meta, dict) and doc.get("kind") in kinds and meta.get("name") == name:
                return i, doc
        return None

    def topologies(self) -> Mapping[str, TopologyDef]:
        """The topologies its workloads' constraints may name, by name: the held ones and the batch's
        own, which replace a held one of their name (an update: its aliases, never its labels). Raises
        ``ManifestError`` naming the document and field of a bad one."""
        return self._known

    def own_topologies(self) -> Mapping[str, TopologyDef]:
        """The KAI ``Topology`` documents in the batch, checked, by name (``topologies``' errors)."""
        return self._topologies

    @cached_property
    def _known(self) -> Mapping[str, TopologyDef]:
        own = self._topologies
        # Most submissions carry no Topology: they read the held ones as they are, without a copy.
        return MappingProxyType({**self.held, **own}) if own else self.held

    @cached_property
    def _topologies(self) -> Mapping[str, TopologyDef]:
        # Read once per batch: every muster job of a submission asks, and a submission may hold
        # thousands of them (reading per job made grouping quadratic in the batch).
        out: dict[str, TopologyDef] = {}
        for i, doc in enumerate(self.docs):
            if not is_topology_manifest(doc):
                continue
            try:
                topo = read_topology(doc)
                check_update(self.held.get(topo.name), topo, "spec")
            except TopologyError as exc:
                raise ManifestError(exc.field, exc.message, document=i) from None
            if topo.name in out:
                raise ManifestError(
                    "metadata.name", f"{topo.name!r} names another Topology already", document=i
                )
            out[topo.name] = topo
        return MappingProxyType(out)

    def claim_templates(self) -> Mapping[str, ClaimTemplate]:
        """DRA ``ResourceClaimTemplate`` documents in the batch, checked, by name: the ones its pods' claims
        may name. Raises ``ManifestError`` naming the document and field of a bad one."""
        return self._claim_templates

    @cached_property
    def _claim_templates(self) -> Mapping[str, ClaimTemplate]:
        return read_templates(self.docs)

    def priority_values(self) -> dict[str, int]:
        """``PriorityClass`` documents in the batch: name to value."""
        out: dict[str, int] = {}
        for doc in self.docs:
            if not isinstance(doc, dict):
                continue
            meta = doc.get("metadata")
            value = doc.get("value")
            if doc.get("kind") == "PriorityClass" and isinstance(meta, dict) and isinstance(value, int):
                out[str(meta.get("name"))] = value
        return out


class GroupObject(Protocol):
    def __call__(self, obj: dict[str, Any], path: str, *, inherited: Meta | None = None) -> list[Draft]: ...


class Context(msgspec.Struct, frozen=True):
    """What a plugin may consult besides its object: the batch, the submission uid,
    and a way to group an object it creates (skip-top-owner kinds).

    A struct, like ``Meta``: one is built for every object grouped."""

    batch: Batch
    uid: str
    group_object: GroupObject
    inherited: Meta | None = None
    """Labels and annotations from a skipped top owner, merged under this object's own."""


class Grouper(Protocol):
    """A plugin: the pod groups one object makes. May also return finished
    ``PodGroupCreated`` events (queue, priority and all decided by the plugin), which
    must be within ``muster.bounds`` already (``muster.scenario.job_to_podgroup`` sees to it)."""

    def __call__(
        self, obj: dict[str, Any], path: str, meta: Meta, ctx: Context
    ) -> list[Draft | PodGroupCreated]: ...


GrouperFn = Callable[[dict[str, Any], str, Meta, Context], "list[Draft | PodGroupCreated]"]


def per_pod_names(base: str, count: int) -> list[str]:
    """Names of per-pod groups: the base itself for one pod, ``base-<i>`` otherwise."""
    return [base] if count == 1 else [f"{base}-{i}" for i in range(count)]
