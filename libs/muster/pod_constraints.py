"""A pod's placement constraints read from Kubernetes' own spelling (core/v1): ``tolerations``,
``affinity``, a node's ``taints``; and the pod-spec fields that change where a pod may run but that muster
does not honour, refused by name rather than dropped.

Shared by the podgrouper (manifests) and scenario files; each turns ``ConstraintError`` into its own
error under its own path. What muster honours, and how it matches, is ``muster.placement_predicates``.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from muster import placement_predicates as pp
from muster.events import (
    LabelSelector,
    LabelSelectorRequirement,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    PodAffinityTerm,
    Taint,
    Toleration,
    WeightedPodAffinityTerm,
)
from muster.field_paths import join
from muster.pod_affinity import SELECTOR_OPERATORS

REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"
NOT_HONOURED = "muster does not honour it"


class ConstraintError(ValueError):
    """A constraint muster cannot read or does not honour; ``path`` is relative to the pod spec."""

    def __init__(self, path: str, message: str) -> None:
        self.path = path
        self.message = message
        super().__init__(f"{path}: {message}")


def _type_name(value: object) -> str:
    return "null" if value is None else type(value).__name__


def _map(value: Any, path: str, allowed: tuple[str, ...]) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ConstraintError(path, f"expected a mapping, got {_type_name(value)}")
    for key in value:
        if key not in allowed:
            raise ConstraintError(join(path, str(key)), f"unknown key {key!r}")
    return value


def _list(value: Any, path: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise ConstraintError(path, f"expected a list, got {_type_name(value)}")
    return value


def _str(obj: dict[str, Any], key: str, path: str, default: str = "") -> str:
    value = obj.get(key)
    if value is None:
        return default
    if not isinstance(value, str):
        raise ConstraintError(join(path, key), f"expected a string, got {_type_name(value)} {value!r}")
    return value


def _one_of(value: str, path: str, allowed: tuple[str, ...]) -> str:
    if value not in allowed:
        raise ConstraintError(path, f"expected one of {', '.join(allowed)}, got {value!r}")
    return value


# -- tolerations and taints ------------------------------------------------------------------------


def tolerations(raw: Any, path: str) -> list[Toleration]:
    """A pod spec's ``tolerations`` list, checked as Kubernetes validates it."""
    return [_toleration(item, join(path, i)) for i, item in enumerate(_list(raw, path))]


def _toleration(raw: Any, path: str) -> Toleration:
    item = _map(raw, path, ("key", "operator", "value", "effect", "tolerationSeconds"))
    key, value = _str(item, "key", path), _str(item, "value", path)
    # Kubernetes reads an empty operator as Equal.
    operator = _str(item, "operator", path) or "Equal"
    _one_of(operator, join(path, "operator"), pp.TOLERATION_OPERATORS)
    effect = _str(item, "effect", path)
    if effect:
        _one_of(effect, join(path, "effect"), pp.TAINT_EFFECTS)
    if not key and operator != "Exists":
        raise ConstraintError(join(path, "operator"), "must be Exists when the key is empty")
    if operator == "Exists" and value:
        raise ConstraintError(join(path, "value"), "must be empty when the operator is Exists")
    seconds = item.get("tolerationSeconds")
    if seconds is not None:
        if isinstance(seconds, bool) or not isinstance(seconds, int):
            raise ConstraintError(join(path, "tolerationSeconds"), f"expected an integer, got {seconds!r}")
        if effect != pp.NO_EXECUTE:
            raise ConstraintError(join(path, "tolerationSeconds"), "only a NoExecute toleration may have it")
    return Toleration(key=key, operator=operator, value=value, effect=effect, toleration_seconds=seconds)


def taints(raw: Any, path: str) -> list[Taint]:
    """A node's ``taints`` list: each a key, an optional value and an effect."""
    out = []
    for i, item in enumerate(_list(raw, path)):
        ipath = join(path, i)
        taint = _map(item, ipath, ("key", "value", "effect"))
        key = _str(taint, "key", ipath)
        if not key:
            raise ConstraintError(join(ipath, "key"), "required field is missing")
        effect = _one_of(_str(taint, "effect", ipath), join(ipath, "effect"), pp.TAINT_EFFECTS)
        out.append(Taint(key=key, value=_str(taint, "value", ipath), effect=effect))
    return out


# -- affinity --------------------------------------------------------------------------------------


AFFINITY_KINDS = ("nodeAffinity", "podAffinity", "podAntiAffinity")


def node_affinity(raw: Any, path: str) -> list[NodeSelectorTerm]:
    """The required node affinity terms of a pod spec's ``affinity``; preferred node affinity is refused
    by name (KAI does not score it). Pod (anti-)affinity is ``pod_affinity``'s."""
    if raw is None:
        return []
    affinity = _map(raw, path, AFFINITY_KINDS)
    npath = join(path, "nodeAffinity")
    node = affinity.get("nodeAffinity")
    if node is None:
        return []
    node = _map(node, npath, (REQUIRED, PREFERRED))
    if node.get(PREFERRED):
        raise ConstraintError(join(npath, PREFERRED), f"{NOT_HONOURED} (KAI does not score it either)")
    rpath = join(npath, REQUIRED)
    if node.get(REQUIRED) is None:
        return []
    required = _map(node[REQUIRED], rpath, ("nodeSelectorTerms",))
    tpath = join(rpath, "nodeSelectorTerms")
    terms = _list(required.get("nodeSelectorTerms"), tpath)
    if not terms:
        raise ConstraintError(tpath, "must have at least one term")
    return [_term(t, join(tpath, i)) for i, t in enumerate(terms)]


def _term(raw: Any, path: str) -> NodeSelectorTerm:
    term = _map(raw, path, ("matchExpressions", "matchFields"))
    epath, fpath = join(path, "matchExpressions"), join(path, "matchFields")
    return NodeSelectorTerm(
        match_expressions=tuple(
            _requirement(r, join(epath, i), fields=False)
            for i, r in enumerate(_list(term.get("matchExpressions"), epath))
        ),
        match_fields=tuple(
            _requirement(r, join(fpath, i), fields=True)
            for i, r in enumerate(_list(term.get("matchFields"), fpath))
        ),
    )


def _requirement(raw: Any, path: str, *, fields: bool) -> NodeSelectorRequirement:
    req = _map(raw, path, ("key", "operator", "values"))
    key = _str(req, "key", path)
    if not key:
        raise ConstraintError(join(path, "key"), "required field is missing")
    if fields and key != pp.NODE_NAME_FIELD:
        raise ConstraintError(join(path, "key"), f"expected {pp.NODE_NAME_FIELD}, got {key!r}")
    ops = pp.FIELD_OPERATORS if fields else pp.LABEL_OPERATORS
    operator = _one_of(_str(req, "operator", path), join(path, "operator"), ops)
    vpath = join(path, "values")
    values = _values(req, vpath, operator)
    if fields and len(values) != 1:
        raise ConstraintError(vpath, f"must hold exactly one node name for {pp.NODE_NAME_FIELD}")
    if operator in ("Gt", "Lt"):
        if len(values) != 1:
            raise ConstraintError(vpath, f"must hold exactly one integer for operator {operator}")
        try:
            int(values[0])
        except ValueError:
            raise ConstraintError(join(vpath, 0), f"expected an integer, got {values[0]!r}") from None
    return NodeSelectorRequirement(key=key, operator=operator, values=values)


def _values(req: dict[str, Any], path: str, operator: str) -> tuple[str, ...]:
    """A requirement's ``values`` at ``path``, as Kubernetes validates them: strings, at least one for
    In and NotIn, none for Exists and DoesNotExist."""
    values = _list(req.get("values"), path)
    for i, v in enumerate(values):
        if not isinstance(v, str):
            raise ConstraintError(join(path, i), f"expected a string, got {_type_name(v)} {v!r}")
    if operator in ("In", "NotIn") and not values:
        raise ConstraintError(path, f"must not be empty for operator {operator}")
    if operator in ("Exists", "DoesNotExist") and values:
        raise ConstraintError(path, f"must be empty for operator {operator}")
    return tuple(values)


# -- pod affinity and anti-affinity -----------------------------------------------------------------

# Fields of a PodAffinityTerm muster cannot honour: it has no namespaces (a term selects among every job's
# pods), and matchLabelKeys / mismatchLabelKeys read labels muster's pods do not carry (pod-template-hash).
_TERM_UNHONOURED = {
    "namespaces": "muster has no namespaces: a term selects among the pods of every job",
    "namespaceSelector": "muster has no namespaces: a term selects among the pods of every job",
    "matchLabelKeys": NOT_HONOURED,
    "mismatchLabelKeys": NOT_HONOURED,
}


class PodAffinity(NamedTuple):
    """A pod spec's pod affinity and anti-affinity terms."""

    required: list[PodAffinityTerm]
    required_anti: list[PodAffinityTerm]
    preferred: list[WeightedPodAffinityTerm]
    preferred_anti: list[WeightedPodAffinityTerm]


def pod_affinity(raw: Any, path: str) -> PodAffinity:
    """The pod affinity and anti-affinity terms of a pod spec's ``affinity``, required and preferred."""
    parts: dict[str, tuple[list[PodAffinityTerm], list[WeightedPodAffinityTerm]]] = {}
    affinity = {} if raw is None else _map(raw, path, AFFINITY_KINDS)
    for kind in ("podAffinity", "podAntiAffinity"):
        kpath = join(path, kind)
        part = affinity.get(kind)
        part = {} if part is None else _map(part, kpath, (REQUIRED, PREFERRED))
        rpath, ppath = join(kpath, REQUIRED), join(kpath, PREFERRED)
        parts[kind] = (
            [_pod_term(t, join(rpath, i)) for i, t in enumerate(_list(part.get(REQUIRED), rpath))],
            [_weighted_term(t, join(ppath, i)) for i, t in enumerate(_list(part.get(PREFERRED), ppath))],
        )
    (near, near_pref), (far, far_pref) = parts["podAffinity"], parts["podAntiAffinity"]
    return PodAffinity(near, far, near_pref, far_pref)


def _weighted_term(raw: Any, path: str) -> WeightedPodAffinityTerm:
    item = _map(raw, path, ("weight", "podAffinityTerm"))
    weight = item.get("weight")
    if isinstance(weight, bool) or not isinstance(weight, int) or not 1 <= weight <= 100:
        raise ConstraintError(join(path, "weight"), f"expected an integer from 1 to 100, got {weight!r}")
    tpath = join(path, "podAffinityTerm")
    if item.get("podAffinityTerm") is None:
        raise ConstraintError(tpath, "required field is missing")
    return WeightedPodAffinityTerm(weight=weight, pod_affinity_term=_pod_term(item["podAffinityTerm"], tpath))


def _pod_term(raw: Any, path: str) -> PodAffinityTerm:
    term = _map(raw, path, ("labelSelector", "topologyKey", *_TERM_UNHONOURED))
    for key, why in _TERM_UNHONOURED.items():
        value = term.get(key)
        # an empty namespaceSelector (every namespace) asks for what muster does anyway
        if value in (None, []) or (key == "namespaceSelector" and value == {}):
            continue
        raise ConstraintError(join(path, key), why)
    key = _str(term, "topologyKey", path)
    if not key:
        raise ConstraintError(join(path, "topologyKey"), "required field is missing")
    spath = join(path, "labelSelector")
    raw_selector = term.get("labelSelector")
    selector = None if raw_selector is None else label_selector(raw_selector, spath)
    return PodAffinityTerm(label_selector=selector, topology_key=key)


def label_selector(raw: Any, path: str) -> LabelSelector:
    """A meta/v1 LabelSelector; ``matchLabels`` becomes ``In`` requirements of one value each (sorted by
    key, before ``matchExpressions``), which is what Kubernetes takes them for."""
    sel = _map(raw, path, ("matchLabels", "matchExpressions"))
    lpath, epath = join(path, "matchLabels"), join(path, "matchExpressions")
    labels = sel.get("matchLabels")
    reqs: list[LabelSelectorRequirement] = []
    if labels is not None:
        if not isinstance(labels, dict):
            raise ConstraintError(lpath, f"expected a mapping, got {_type_name(labels)}")
        for k in sorted(labels, key=str):
            reqs.append(LabelSelectorRequirement(key=str(k), operator="In", values=(_str(labels, k, lpath),)))
    for i, r in enumerate(_list(sel.get("matchExpressions"), epath)):
        reqs.append(_selector_requirement(r, join(epath, i)))
    return LabelSelector(match_expressions=tuple(reqs))


def _selector_requirement(raw: Any, path: str) -> LabelSelectorRequirement:
    req = _map(raw, path, ("key", "operator", "values"))
    key = _str(req, "key", path)
    if not key:
        raise ConstraintError(join(path, "key"), "required field is missing")
    operator = _one_of(_str(req, "operator", path), join(path, "operator"), SELECTOR_OPERATORS)
    return LabelSelectorRequirement(
        key=key, operator=operator, values=_values(req, join(path, "values"), operator)
    )


# -- a pod spec ------------------------------------------------------------------------------------


class Constraints(NamedTuple):
    """What of a pod spec restricts or ranks its nodes, as muster honours it."""

    tolerations: list[Toleration]
    node_affinity: list[NodeSelectorTerm]
    """Required node affinity terms."""
    pod_affinity: PodAffinity

    def pod_spec_fields(self) -> dict[str, list]:
        """These constraints as ``PodSpec`` fields."""
        near = self.pod_affinity
        return {
            "tolerations": list(self.tolerations),
            "node_affinity": list(self.node_affinity),
            "pod_affinity": list(near.required),
            "pod_anti_affinity": list(near.required_anti),
            "preferred_pod_affinity": list(near.preferred),
            "preferred_pod_anti_affinity": list(near.preferred_anti),
        }


NONE = Constraints([], [], PodAffinity([], [], [], []))
"""A pod spec that gives no tolerations and no affinity (shared: never change its lists)."""


def from_pod_spec(spec: dict[str, Any]) -> Constraints:
    """A pod spec's tolerations, required node affinity and required pod (anti-)affinity; paths relative
    to the spec."""
    return affinity_constraints(spec.get("tolerations"), spec.get("affinity"))


def affinity_constraints(raw_tolerations: Any, raw_affinity: Any) -> Constraints:
    """``tolerations`` and ``affinity`` as a pod spec spells them (paths ``tolerations``, ``affinity``)."""
    if raw_affinity is None and (raw_tolerations is None or raw_tolerations == []):
        # Most pods give neither: every submitted pod passes here.
        return NONE
    return Constraints(
        tolerations(raw_tolerations, "tolerations"),
        node_affinity(raw_affinity, "affinity"),
        pod_affinity(raw_affinity, "affinity"),
    )


def refuse_unhonoured(spec: dict[str, Any]) -> None:
    """Refuse, by name, a pod-spec field that changes where the pod may run and that muster does not
    honour: ``nodeName``, ``topologySpreadConstraints`` (KAI does not run PodTopologySpread), a container's
    ``hostPort``. (MIG profiles, ``nvidia.com/mig-*``, are honoured: ``muster.mig``; DRA ``resourceClaims``
    and a container's ``claims`` are read by the podgrouper, ``grouping/dra_claims.py``.)
    ``affinity``'s own are refused as it is read (``node_affinity``, ``pod_affinity``)."""
    if spec.get("nodeName"):
        raise ConstraintError("nodeName", f"{NOT_HONOURED}: the scheduler chooses the node")
    if spec.get("topologySpreadConstraints"):
        raise ConstraintError("topologySpreadConstraints", NOT_HONOURED)
    for kind in ("containers", "initContainers"):
        containers = spec.get(kind)
        if not isinstance(containers, list):
            continue
        for i, container in enumerate(containers):
            if not isinstance(container, dict):
                continue
            ports = container.get("ports")
            if not isinstance(ports, list):
                continue
            for j, port in enumerate(ports):
                if isinstance(port, dict) and port.get("hostPort"):
                    raise ConstraintError(f"{kind}[{i}].ports[{j}].hostPort", NOT_HONOURED)
