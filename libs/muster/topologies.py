"""KAI's ``Topology`` resource (kai-semantics.md §18) and the constraints that name one.

A Topology lists 1 to 16 node labels from the widest level (a zone, a block) to the narrowest (a rack,
a host); a level may have an alias. A job's constraint names a topology and a required and/or a
preferred level, each the level's label or its alias. Here a topology is checked as KAI's CRD and
admission webhook check it, and a constraint is resolved once into label keys, with the topology's
ordered labels carried along, so the allocator never needs the resource itself.

Where KAI leaves a job with a bad constraint unscheduled with a configuration error (a topology that
does not exist, a level that is not one of its levels, a preferred level wider than the required one,
a topology named with neither level), muster refuses it when it is read, naming the field.

A Topology is a cluster object: once declared, the podgrouper holds it for later submissions
(``muster.held_topologies``), and a re-declaration may edit its aliases, never its labels
(``check_update``). The scenario loader (its ``topologies`` list) and the podgrouper
(``kai.scheduler/v1alpha1`` Topology documents) read topologies through this module; ``muster.scheduler.topology`` places by them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from muster.events import Topology
from muster.field_paths import join

API_VERSION = "kai.scheduler/v1alpha1"
KIND = "Topology"
MAX_LEVELS = 16
HOSTNAME_LABEL = "kubernetes.io/hostname"


class TopologyError(ValueError):
    """A malformed Topology or a constraint that does not fit its topology; ``field`` names the field."""

    def __init__(self, field: str, message: str) -> None:
        self.field = field
        self.message = message
        super().__init__(f"{field}: {message}")


@dataclass(frozen=True)
class Level:
    label: str
    """The node label key whose values are this level's domains."""
    alias: str = ""
    """A friendlier name a constraint may use instead of ``label`` ('' for none)."""


@dataclass(frozen=True)
class TopologyDef:
    """One checked Topology: its name and levels, widest first."""

    name: str
    levels: tuple[Level, ...]

    def labels(self) -> tuple[str, ...]:
        return tuple(level.label for level in self.levels)

    def label_of(self, level: str) -> str | None:
        """The label key ``level`` names, as a label or an alias; None if it names no level."""
        for each in self.levels:
            if level in (each.label, each.alias):
                return each.label
        return None


def check_topology(name: str, levels: Sequence[Level], path: str = "") -> TopologyDef:
    """A ``TopologyDef`` of ``levels``, or ``TopologyError`` naming the first bad field under ``path``
    (``levels[1].alias``): KAI's CRD rules (1–16 levels, labels unique, the hostname label only last)
    and its webhook's (aliases unique, none equal to a level's label)."""
    if not name:
        raise TopologyError(join(path, "name"), "a topology needs a name")
    where = join(path, "levels")
    if not 1 <= len(levels) <= MAX_LEVELS:
        raise TopologyError(where, f"a topology has 1 to {MAX_LEVELS} levels, got {len(levels)}")
    labels = [level.label for level in levels]
    seen_aliases: dict[str, int] = {}
    for k, level in enumerate(levels):
        at = join(where, k)
        if not level.label:
            raise TopologyError(join(at, "nodeLabel"), "a level needs a node label")
        if level.label in labels[:k]:
            raise TopologyError(
                join(at, "nodeLabel"), f"{level.label!r} is already level {labels.index(level.label)}"
            )
        if level.label == HOSTNAME_LABEL and k != len(levels) - 1:
            raise TopologyError(
                join(at, "nodeLabel"), f"{HOSTNAME_LABEL} may only be the last (narrowest) level"
            )
        if not level.alias:
            continue
        if level.alias in labels:
            raise TopologyError(join(at, "alias"), f"{level.alias!r} is the node label of another level")
        if level.alias in seen_aliases:
            raise TopologyError(
                join(at, "alias"),
                f"{level.alias!r} is already the alias of level {seen_aliases[level.alias]}",
            )
        seen_aliases[level.alias] = k
    return TopologyDef(name, tuple(levels))


def check_update(held: TopologyDef | None, new: TopologyDef, path: str = "") -> None:
    """``TopologyError`` (naming ``levels`` under ``path``) when ``new`` would change the node labels of
    the topology of its name already ``held``: KAI's webhook lets an update edit aliases only."""
    if held is None or held.labels() == new.labels():
        return
    raise TopologyError(
        join(path, "levels"),
        f"topology {new.name!r} is held with the node labels {', '.join(held.labels())}; they are "
        "immutable (only aliases may be edited)",
    )


def is_topology_manifest(doc: object) -> bool:
    """Whether ``doc`` is a KAI ``kai.scheduler`` Topology document."""
    return (
        isinstance(doc, dict)
        and doc.get("kind") == KIND
        and str(doc.get("apiVersion", "")).split("/")[0] == API_VERSION.split("/")[0]
    )


def read_manifest(doc: dict[str, Any]) -> TopologyDef:
    """A Topology document as KAI's API spells it (``spec.levels[].nodeLabel``, ``alias``); refuses by
    name a field it does not know, as the CRD's schema does."""
    if doc.get("apiVersion") != API_VERSION:
        raise TopologyError("apiVersion", f"expected {API_VERSION}, got {doc.get('apiVersion')!r}")
    meta = doc.get("metadata")
    name = meta.get("name") if isinstance(meta, dict) else None
    if not isinstance(name, str) or not name:
        raise TopologyError("metadata.name", "a Topology needs a name")
    spec = doc.get("spec")
    if not isinstance(spec, dict):
        raise TopologyError("spec", "expected a mapping with levels")
    for key in spec:
        if key != "levels":
            raise TopologyError(join("spec", str(key)), "not a field of a Topology's spec")
    raw = spec.get("levels")
    if not isinstance(raw, list):
        raise TopologyError("spec.levels", "expected a list of {nodeLabel, alias}")
    levels = []
    for k, item in enumerate(raw):
        at = join("spec.levels", k)
        if not isinstance(item, dict):
            raise TopologyError(at, "expected a mapping {nodeLabel, alias}")
        for key in item:
            if key not in ("nodeLabel", "alias"):
                raise TopologyError(join(at, str(key)), "not a field of a topology level")
        label, alias = item.get("nodeLabel", ""), item.get("alias", "")
        for key, value in (("nodeLabel", label), ("alias", alias)):
            if not isinstance(value, str):
                raise TopologyError(join(at, key), f"expected a string, got {type(value).__name__}")
        levels.append(Level(label, alias))
    return check_topology(name, levels, "spec")


def to_manifest(topo: TopologyDef) -> dict[str, Any]:
    """``topo`` as KAI's Topology document, which ``read_manifest`` reads back to it."""
    levels = [{"nodeLabel": lv.label, **({"alias": lv.alias} if lv.alias else {})} for lv in topo.levels]
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": {"name": topo.name},
        "spec": {"levels": levels},
    }


def constraint(
    topologies: Mapping[str, TopologyDef] | None,
    name: str | None,
    required: str | None,
    preferred: str | None,
    *,
    fields: tuple[str, str, str] = ("name", "required", "preferred"),
) -> Topology:
    """The constraint a job states, resolved: ``required``/``preferred`` as label keys and, when it names
    a topology, that topology's labels (widest first). ``fields`` are the paths of the name, required and
    preferred fields, for errors. Without a name the levels are node labels themselves, as before
    Topology resources (one level each)."""
    name_field, required_field, preferred_field = fields
    if not name:
        return Topology(required=required or None, preferred=preferred or None)
    known = topologies or {}
    topo = known.get(name)
    if topo is None:
        have = ", ".join(sorted(known)) or "none"
        raise TopologyError(name_field, f"no topology named {name!r} (known: {have})")
    if not required and not preferred:
        raise TopologyError(
            name_field, f"topology {name!r} is named with neither a required nor a preferred level"
        )
    labels = topo.labels()
    resolved = []
    for level, field in ((required, required_field), (preferred, preferred_field)):
        if not level:
            resolved.append(None)
            continue
        label = topo.label_of(level)
        if label is None:
            raise TopologyError(
                field, f"{level!r} is not a level of topology {name!r} (levels: {', '.join(labels)})"
            )
        resolved.append(label)
    req, pref = resolved
    if req is not None and pref is not None and labels.index(pref) < labels.index(req):
        raise TopologyError(
            preferred_field, f"preferred level {preferred!r} is wider than the required {required!r}"
        )
    return Topology(name=name, levels=labels, required=req, preferred=pref)


def shape_error(topo: Topology) -> tuple[str, str] | None:
    """(field, why) when a resolved constraint, as an event carries it, is not one ``constraint`` could
    have made (a level outside its topology's, a preferred level wider than the required, more than
    ``MAX_LEVELS`` levels), else None: what bus admission refuses so the allocator never meets one."""
    if not topo.levels:
        return None
    if len(topo.levels) > MAX_LEVELS:
        return "levels", f"{len(topo.levels)} levels is above the limit of {MAX_LEVELS}"
    if len(set(topo.levels)) != len(topo.levels):
        return "levels", "a level label appears twice"
    if not topo.required and not topo.preferred:
        return "name", "a topology named with neither a required nor a preferred level"
    for field, level in (("required", topo.required), ("preferred", topo.preferred)):
        if level and level not in topo.levels:
            return field, f"{level!r} is not one of the levels"
    if (
        topo.required
        and topo.preferred
        and topo.levels.index(topo.preferred) < topo.levels.index(topo.required)
    ):
        return "preferred", "the preferred level is wider than the required one"
    return None
