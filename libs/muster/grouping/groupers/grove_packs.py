"""Grove's pack constraints on a PodCliqueSet, read as the PodGang's and resolved as KAI does (§4.14).

Grove writes a ``topologyConstraint`` on the PodCliqueSet's template (the base PodGang's root), on a
scaling group (a parent over each of its replicas' cliques in the base PodGang; the root of a scaled
PodGang) and on a clique (its leaf): ``pack.required`` / ``pack.preferred`` (``packConstraint``, the
PodGang's spelling, reads the same; the deprecated ``packDomain`` is a required level). Grove turns a
pack domain into a level of its ClusterTopology; muster has none, so a level is read as a level's label
or alias of the KAI Topology the PodGang names: ``grove.io/topology-name`` (on the PodCliqueSet here,
as there is no PodGang), else the constraints' own ``topologyName`` (one per PodCliqueSet, as Grove's
admission requires), else ``kai.scheduler/topology``. KAI refuses a pack constraint with no topology
name; so does muster, naming the field.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from muster.events import Topology
from muster.grouping.errors import ManifestError
from muster.grouping.fields import get_map, get_str, join
from muster.grouping.metadata import PREFERRED_PLACEMENT, REQUIRED_PLACEMENT, TOPOLOGY_ANNOTATION
from muster.topologies import TopologyDef, TopologyError, constraint

GROVE_TOPOLOGY_NAME = "grove.io/topology-name"
_FIELDS = frozenset({"topologyName", "pack", "packConstraint", "packDomain"})
_LEVELS = frozenset({"required", "preferred"})
_ANNOTATIONS = join("metadata", "annotations")


@dataclass(frozen=True)
class Pack:
    """One ``topologyConstraint``'s levels as written, each with the field it was read from."""

    required: str | None
    preferred: str | None
    fields: tuple[str, str]


@dataclass(frozen=True)
class TopologyName:
    """The KAI Topology a PodCliqueSet's pack constraints name ('' for none) and where it was read."""

    name: str
    field: str


def read_pack(obj: dict[str, Any], path: str) -> Pack | None:
    """``obj.topologyConstraint`` (at ``path``) as a pack; None when it states no level. A field Grove
    does not have there is refused by name, as are ``pack.required`` and ``packDomain`` together."""
    tpath = join(path, "topologyConstraint")
    given = get_map(obj, "topologyConstraint", path)
    for key in given:
        if key not in _FIELDS:
            raise ManifestError(join(tpath, str(key)), "not a field of a Grove topologyConstraint")
    if given.get("pack") and given.get("packConstraint"):
        raise ManifestError(join(tpath, "packConstraint"), "give pack or packConstraint, not both")
    key = "packConstraint" if given.get("packConstraint") else "pack"
    ppath = join(tpath, key)
    pack = get_map(given, key, tpath)
    for level in pack:
        if level not in _LEVELS:
            raise ManifestError(join(ppath, str(level)), "a pack constraint has only required and preferred")
    required = get_str(pack, "required", ppath) or None
    preferred = get_str(pack, "preferred", ppath) or None
    required_field = join(ppath, "required")
    legacy = get_str(given, "packDomain", tpath) or None
    if legacy is not None:
        if required is not None:
            raise ManifestError(join(tpath, "packDomain"), "deprecated packDomain and pack.required together")
        required, required_field = legacy, join(tpath, "packDomain")
    if required is None and preferred is None:
        return None
    return Pack(required, preferred, (required_field, join(ppath, "preferred")))


def stated_name(obj: dict[str, Any], path: str) -> tuple[str, str] | None:
    """``obj.topologyConstraint.topologyName`` and its field, if stated."""
    given = get_map(obj, "topologyConstraint", path)
    tpath = join(path, "topologyConstraint")
    name = get_str(given, "topologyName", tpath)
    return (name, join(tpath, "topologyName")) if name else None


def topology_name(annotations: Mapping[str, str], stated: list[tuple[str, str]]) -> TopologyName:
    """The one topology name of a PodCliqueSet whose (merged) annotations are ``annotations`` and whose
    constraints state the ``(topologyName, field)`` pairs ``stated``; a stated name that differs from it
    is refused naming its field."""
    if annotations.get(GROVE_TOPOLOGY_NAME):
        found = TopologyName(annotations[GROVE_TOPOLOGY_NAME], join(_ANNOTATIONS, GROVE_TOPOLOGY_NAME))
    elif stated:
        found = TopologyName(*stated[0])
    else:
        found = TopologyName(
            annotations.get(TOPOLOGY_ANNOTATION, ""), join(_ANNOTATIONS, TOPOLOGY_ANNOTATION)
        )
    for name, field in stated:
        if name != found.name:
            raise ManifestError(
                field,
                f"names topology {name!r}, but this PodCliqueSet's pack constraints are resolved against "
                f"{found.name!r} ({found.field}): one topology per PodCliqueSet",
            )
    return found


def resolve(pack: Pack, name: TopologyName, topologies: Mapping[str, TopologyDef]) -> Topology:
    """``pack`` as a constraint of the topology ``name``: each level one of its levels' labels or aliases
    (``muster.topologies.constraint``), refused naming the field otherwise or when there is no name."""
    if not name.name:
        raise ManifestError(
            pack.fields[0] if pack.required else pack.fields[1],
            f"a pack constraint needs a topology name: {GROVE_TOPOLOGY_NAME} or {TOPOLOGY_ANNOTATION} on "
            "the PodCliqueSet, or topologyName in a topologyConstraint",
        )
    try:
        return constraint(
            topologies, name.name, pack.required, pack.preferred, fields=(name.field, *pack.fields)
        )
    except TopologyError as exc:
        raise ManifestError(exc.field, exc.message) from None


def root_pack(pack: Pack | None, annotations: Mapping[str, str]) -> Pack | None:
    """A PodGang root's pack with a level it leaves empty filled from the merged ``kai.scheduler/topology-*``
    annotations (KAI's grove grouper); None when it has no pack (the annotations alone then apply, as
    for any kind)."""
    if pack is None:
        return None
    required, preferred = pack.required, pack.preferred
    fields = list(pack.fields)
    for k, (level, key) in enumerate(((required, REQUIRED_PLACEMENT), (preferred, PREFERRED_PLACEMENT))):
        if level is None and annotations.get(key):
            fields[k] = join(_ANNOTATIONS, key)
    return Pack(
        required or annotations.get(REQUIRED_PLACEMENT) or None,
        preferred or annotations.get(PREFERRED_PLACEMENT) or None,
        (fields[0], fields[1]),
    )
