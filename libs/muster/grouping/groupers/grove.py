"""Grove PodCliqueSet (and its older name PodGangSet): one gang per PodGang.

Grove makes, per PodCliqueSet replica ``r``, a base PodGang ``<pcs>-<r>`` holding
every standalone clique and the first ``minAvailable`` replicas (default 1) of
each scaling group; each further scaling-group replica gets its own PodGang
``<pcs>-<r>-<group>-<i>``. KAI turns a PodGang into a group whose sub-groups are
its cliques (``minReplicas`` = the clique's ``minAvailable``, defaulting to its
``replicas``) and whose min_available is their sum. The PodGang's priority class
(the template's ``priorityClassName``) wins over the default; a
``priorityClassName`` label on the PodCliqueSet wins over both.

Grove's pack constraints (``grove_packs``) become the PodGang's, as Grove writes them and KAI reads
them: the template's on the base PodGang's root, a scaling group's on a parent sub-group
(``topologyConstraintGroupConfigs``: one per scaling replica in the base PodGang, named
``<pcs>-<r>-<group>-<j>``, needing all of its cliques) and on the root of each scaled PodGang (the
template's when it has none), a clique's on its leaf.

A clique's own ``labels`` and ``annotations`` are its pods' (Grove copies them onto the PodClique and
its pods): read as a pod template's metadata is for any kind (GPU sharing, timing, queue, priority and
preemptibility, pod affinity). Grove's own labels (``controller_labels``) win over them, as in Grove.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from muster.events import SubGroup, Topology
from muster.grouping.controller_labels import synthesised
from muster.grouping.errors import ManifestError
from muster.grouping.fields import (
    as_map,
    get_count,
    get_int,
    get_list,
    get_str,
    join,
    require_map,
    string_map,
)
from muster.grouping.groupers.grove_packs import (
    GROVE_TOPOLOGY_NAME,
    Pack,
    read_pack,
    resolve,
    root_pack,
    stated_name,
    topology_name,
)
from muster.grouping.limits import check_count
from muster.grouping.metadata import PREFERRED_PLACEMENT, REQUIRED_PLACEMENT, TOPOLOGY_ANNOTATION
from muster.grouping.model import Context, Draft, Meta, PodTemplate, pod_template
from muster.pod_constraints import NOT_HONOURED

_SHARING = "shared dynamic resource claims (DRA) are not counted or placed"


def _refuse_unhonoured(obj: dict[str, Any], path: str) -> None:
    """Refuse by name what would change where Grove's pods run and muster cannot honour (never drop it):
    DRA resource sharing."""
    for key in ("resourceClaimTemplates", "resourceSharing"):
        if obj.get(key):
            raise ManifestError(join(path, key), f"{NOT_HONOURED}: {_SHARING}")


# Grove's automatic Multi-Node NVLink: on a PodCliqueSet, scaling group or clique, an enrolment gives the
# GPU pods a DRA claim on a ComputeDomain Grove creates (older Grove: auto-mnnvl, newer: mnnvl-group).
_MNNVL_OFF = {"grove.io/auto-mnnvl": "disabled", "grove.io/mnnvl-group": "none"}
_MNNVL = (
    "Grove's automatic Multi-Node NVLink gives the GPU pods a DRA ComputeDomain claim, which muster neither "
    "counts nor places"
)


def _refuse_mnnvl(annotations: dict[str, str], path: str) -> None:
    """Refuse by name an MNNVL enrolment among ``annotations`` (at ``path``); opting out is fine."""
    for key, off in _MNNVL_OFF.items():
        if key in annotations and annotations[key] != off:
            raise ManifestError(join(path, key), f"{NOT_HONOURED}: {_MNNVL}")


# Grove drops grove.io/topology-name from a clique's pods, and KAI reads a PodGang's topology from the
# PodGang, never from its pods: on a clique these would say something nobody reads.
_NOT_A_CLIQUES = (GROVE_TOPOLOGY_NAME, TOPOLOGY_ANNOTATION, REQUIRED_PLACEMENT, PREFERRED_PLACEMENT)


def _clique_meta(clique: dict[str, Any], name: str, cpath: str) -> Meta:
    """A clique's ``labels`` and ``annotations``, its pods' metadata; a topology annotation is refused by
    name (a clique's level is its ``topologyConstraint``)."""
    annotations = string_map(clique, "annotations", cpath)
    _refuse_mnnvl(annotations, join(cpath, "annotations"))
    for key in _NOT_A_CLIQUES:
        if key in annotations:
            raise ManifestError(
                join(join(cpath, "annotations"), key),
                "KAI reads a PodGang's topology from the PodCliqueSet, not from a clique's pods: name the "
                "topology there and give the clique its own level in its topologyConstraint",
            )
    return Meta("", "", name, string_map(clique, "labels", cpath), annotations)


@dataclass(frozen=True)
class _Clique:
    minimum: int
    pods: PodTemplate
    pack: Pack | None


@dataclass(frozen=True)
class _Part:
    """One PodClique of a PodGang: its leaf's name below the gang's, its clique, parent and pods' labels."""

    label: str
    clique: str
    parent: str | None
    grove_labels: dict[str, str]


@dataclass(frozen=True)
class _ScalingGroup:
    name: str
    members: list[str]
    replicas: int
    minimum: int
    constrained: bool
    """Whether it states a topologyConstraint: Grove then makes a parent of each replica in the base PodGang."""
    pack: Pack | None


def _cliques(template: dict[str, Any], tpath: str) -> dict[str, _Clique]:
    out: dict[str, _Clique] = {}
    for i, raw in enumerate(get_list(template, "cliques", tpath)):
        cpath = join(join(tpath, "cliques"), i)
        clique = as_map(raw, cpath)
        name = get_str(clique, "name", cpath)
        if not name:
            raise ManifestError(join(cpath, "name"), "required field is missing")
        _refuse_unhonoured(clique, cpath)
        spath = join(cpath, "spec")
        spec = require_map(clique, "spec", cpath)
        _refuse_unhonoured(spec, spath)
        if spec.get("topologyConstraint"):
            raise ManifestError(
                join(spath, "topologyConstraint"),
                "not a field of a PodClique's spec: Grove reads a clique's topologyConstraint beside its spec",
            )
        replicas = get_count(spec, "replicas", spath, 1)
        minimum = get_int(spec, "minAvailable", spath, replicas)
        if minimum is None or minimum <= 0:
            raise ManifestError(join(spath, "minAvailable"), f"must be positive, got {minimum}")
        check_count(minimum, join(spath, "minAvailable"))
        pods = pod_template(
            require_map(spec, "podSpec", spath),
            join(spath, "podSpec"),
            role=name,
            count=replicas,
            spec_key=None,
            metadata=(_clique_meta(clique, name, cpath), cpath),
        )
        out[name] = _Clique(minimum, pods, read_pack(clique, cpath))
    if not out:
        raise ManifestError(join(tpath, "cliques"), "needs at least one clique")
    return out


def _scaling_groups(template: dict[str, Any], tpath: str, cliques) -> list[_ScalingGroup]:
    out = []
    for i, raw in enumerate(get_list(template, "podCliqueScalingGroups", tpath)):
        gpath = join(join(tpath, "podCliqueScalingGroups"), i)
        group = as_map(raw, gpath)
        _refuse_unhonoured(group, gpath)
        _refuse_mnnvl(string_map(group, "annotations", gpath), join(gpath, "annotations"))
        name = get_str(group, "name", gpath) or f"sg-{i}"
        members = [str(c) for c in get_list(group, "cliqueNames", gpath)]
        for j, member in enumerate(members):
            if member not in cliques:
                raise ManifestError(join(join(gpath, "cliqueNames"), j), f"no clique named {member!r}")
        replicas = get_count(group, "replicas", gpath, 1)
        minimum = get_count(group, "minAvailable", gpath, 1)
        constrained = bool(group.get("topologyConstraint"))
        out.append(
            _ScalingGroup(
                name, members, replicas, min(minimum, replicas), constrained, read_pack(group, gpath)
            )
        )
    return out


def _stated_names(template: dict[str, Any], tpath: str) -> list[tuple[str, str]]:
    """Every ``topologyName`` the template's constraints state, the template's first."""
    found = [stated_name(template, tpath)]
    for key in ("podCliqueScalingGroups", "cliques"):
        for i, raw in enumerate(get_list(template, key, tpath)):
            if isinstance(raw, dict):
                found.append(stated_name(raw, join(join(tpath, key), i)))
    return [each for each in found if each is not None]


def group_podcliqueset(obj: dict[str, Any], path: str, meta: Meta, ctx: Context) -> list[Draft]:
    spath = join(path, "spec")
    spec = require_map(obj, "spec", path)
    tpath = join(spath, "template")
    template = require_map(spec, "template", spath)
    _refuse_mnnvl(meta.annotations, join(join(path, "metadata"), "annotations"))
    _refuse_unhonoured(template, tpath)
    cliques = _cliques(template, tpath)
    scaling = _scaling_groups(template, tpath, cliques)
    in_groups = {member for sg in scaling for member in sg.members}
    priority = meta.labels.get("priorityClassName") or get_str(template, "priorityClassName", tpath) or None
    drafts = []

    # Each pack is resolved once, against the one topology the PodCliqueSet names.
    named = topology_name(meta.annotations, _stated_names(template, tpath))
    known = ctx.batch.topologies()

    def resolved(pack: Pack | None) -> Topology | None:
        return None if pack is None else resolve(pack, named, known)

    def root(pack: Pack | None) -> Topology | None | Literal["auto"]:
        filled = root_pack(pack, meta.annotations)
        return "auto" if filled is None else resolved(filled)

    leaf_topology = {c: resolved(clique.pack) for c, clique in cliques.items()}
    parent_topology = {sg.name: resolved(sg.pack) for sg in scaling}
    template_pack = read_pack(template, tpath)
    base_root = root(template_pack)

    def gang(
        name: str,
        parts: list[_Part],
        topology: Topology | None | Literal["auto"],
        parents: tuple[SubGroup, ...] = (),
    ) -> Draft:
        leaves = tuple(
            SubGroup(
                name=f"{name}-{part.label}",
                min_available=cliques[part.clique].minimum,
                parent=part.parent,
                topology=leaf_topology[part.clique],
            )
            for part in parts
        )
        pods = tuple(
            cliques[part.clique].pods.with_pod(
                subgroup=f"{name}-{part.label}",
                labels={**cliques[part.clique].pods.labels, **part.grove_labels},
            )
            for part in parts
        )
        return Draft(
            name=name,
            kind=meta.kind,
            top=meta,
            owners=(meta,),
            pods=pods,
            min_available=sum(s.min_available for s in leaves),
            subgroups=parents + leaves,
            priority_class=priority,
            topology=topology,
        )

    # Each replica repeats every clique outside a scaling group once and each scaling group's
    # cliques once per scaling replica: bound that before building any of it.
    where = join(tpath, "podCliqueScalingGroups" if scaling else "cliques")
    pods_each = sum(cliques[c].pods.pod.count for c in cliques if c not in in_groups)
    parts_each = sum(1 for c in cliques if c not in in_groups)
    for sg in scaling:
        pods_each += check_count(sg.replicas * sum(cliques[c].pods.pod.count for c in sg.members), where)
        parts_each += check_count(sg.replicas * (len(sg.members) + sg.constrained), where, "sub-groups")
    check_count(pods_each, where)
    check_count(parts_each, where, "sub-groups")
    copies = get_count(spec, "replicas", spath, 1)
    check_count(copies * pods_each, join(spath, "replicas"))
    check_count(copies * parts_each, join(spath, "replicas"), "sub-groups")

    def labels(r: int, role: str, podclique: str, podgang: str, **more: Any) -> dict[str, str]:
        """Grove's labels on the pods of the PodClique ``podclique`` of replica ``r``."""
        return synthesised(
            "PodCliqueSet",
            name=meta.name,
            role=role,
            podclique=podclique,
            podgang=podgang,
            replica=r,
            **more,
        )

    for r in range(copies):
        base = f"{meta.name}-{r}"
        parts = [
            _Part(c, c, None, labels(r, "clique", f"{base}-{c}", base)) for c in cliques if c not in in_groups
        ]
        parents: list[SubGroup] = []
        for sg in scaling:
            group = f"{base}-{sg.name}"
            for j in range(sg.minimum):
                parent = f"{base}-{sg.name}-{j}" if sg.constrained else None
                if parent is not None:
                    parents.append(
                        SubGroup(
                            name=parent,
                            min_subgroup=len(sg.members),
                            topology=parent_topology[sg.name],
                        )
                    )
                parts += [
                    _Part(
                        f"{sg.name}-{j}-{c}",
                        c,
                        parent,
                        labels(r, "scaling", f"{group}-{j}-{c}", base, scaling_group=group, scaling_index=j),
                    )
                    for c in sg.members
                ]
        drafts.append(gang(base, parts, base_root, tuple(parents)))
        for sg in scaling:
            group = f"{base}-{sg.name}"
            scaled_root = root(sg.pack) if sg.constrained else base_root
            for j in range(sg.replicas - sg.minimum):
                # Grove numbers a scaled PodGang from 0 and its PodCliques by the scaling replica.
                index = sg.minimum + j
                scaled = [
                    _Part(
                        c,
                        c,
                        None,
                        labels(
                            r,
                            "scaled",
                            f"{group}-{index}-{c}",
                            f"{group}-{j}",
                            scaling_group=group,
                            scaling_index=index,
                            base=base,
                        ),
                    )
                    for c in sg.members
                ]
                drafts.append(gang(f"{group}-{j}", scaled, scaled_root))
    return drafts
