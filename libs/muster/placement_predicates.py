"""The static node predicates KAI runs through kube-scheduler's plugins (kai-semantics.md §16): taints
against tolerations (TaintToleration, filter only) and required node affinity (NodeAffinity).

Pure: a pod's constraints and one node's name, labels and taints in, a yes or no out. ``NodeTable.eligible``
builds every node mask from these, and the reasons name which of them a job fails by.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from muster.events import NodeSelectorRequirement, NodeSelectorTerm, Taint, Toleration

NO_SCHEDULE, PREFER_NO_SCHEDULE, NO_EXECUTE = "NoSchedule", "PreferNoSchedule", "NoExecute"
TAINT_EFFECTS = (NO_SCHEDULE, PREFER_NO_SCHEDULE, NO_EXECUTE)
TOLERATION_OPERATORS = ("Equal", "Exists")
LABEL_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")
FIELD_OPERATORS = ("In", "NotIn")
NODE_NAME_FIELD = "metadata.name"
"""The one node field a ``matchFields`` requirement may name."""

# PreferNoSchedule only scores in kube-scheduler, and KAI does not run that score.
_FILTERING = frozenset({NO_SCHEDULE, NO_EXECUTE})


def tolerates(toleration: Toleration, taint: Taint) -> bool:
    """Whether one toleration accepts one taint: same effect (or none named), same key (or none named,
    which only Exists may do), and the same value unless the operator is Exists."""
    if toleration.effect and toleration.effect != taint.effect:
        return False
    if toleration.key and toleration.key != taint.key:
        return False
    if toleration.operator == "Exists":
        return True
    return toleration.operator in ("", "Equal") and toleration.value == taint.value


def untolerated(tolerations: Sequence[Toleration], taints: Iterable[Taint]) -> list[Taint]:
    """The taints that keep a pod with ``tolerations`` off a node: NoSchedule and NoExecute ones that no
    toleration accepts."""
    return [t for t in taints if t.effect in _FILTERING and not any(tolerates(tol, t) for tol in tolerations)]


def _integer(text: str) -> int | None:
    try:
        return int(text)
    except ValueError:
        return None


def requirement_holds(req: NodeSelectorRequirement, value: str | None) -> bool:
    """Whether one requirement holds for a node whose label (or field) ``req.key`` is ``value`` (None:
    absent). NotIn and DoesNotExist hold for an absent label; Gt and Lt compare integers, and a value that
    is not one fails them."""
    op = req.operator
    if op == "In":
        return value is not None and value in req.values
    if op == "NotIn":
        return value is None or value not in req.values
    if op == "Exists":
        return value is not None
    if op == "DoesNotExist":
        return value is None
    if op in ("Gt", "Lt") and value is not None and len(req.values) == 1:
        have, bound = _integer(value), _integer(req.values[0])
        if have is None or bound is None:
            return False
        return have > bound if op == "Gt" else have < bound
    return False


def term_matches(term: NodeSelectorTerm, name: str, labels: Mapping[str, str]) -> bool:
    """Whether every requirement of one term holds; a term with none matches no node (as Kubernetes)."""
    if not term.match_expressions and not term.match_fields:
        return False
    return all(requirement_holds(r, labels.get(r.key)) for r in term.match_expressions) and all(
        requirement_holds(r, name if r.key == NODE_NAME_FIELD else None) for r in term.match_fields
    )


def affinity_matches(terms: Sequence[NodeSelectorTerm], name: str, labels: Mapping[str, str]) -> bool:
    """Whether a node meets a pod's required node affinity: one of its terms matches (no terms: any node)."""
    return not terms or any(term_matches(t, name, labels) for t in terms)


def describe_taint(taint: Taint) -> str:
    """A taint as kubectl writes it: ``key=value:Effect`` (``key:Effect`` without a value)."""
    return f"{taint.key}={taint.value}:{taint.effect}" if taint.value else f"{taint.key}:{taint.effect}"


def describe_toleration(toleration: Toleration) -> str:
    """A toleration in a taint's words: ``key=value:Effect``, ``key=*`` (Exists: any value), ``*`` (every taint)."""
    what = toleration.key or "*"
    if toleration.key and toleration.operator != "Exists":
        what = f"{what}={toleration.value}"
    elif toleration.key:
        what = f"{what}=*"
    return f"{what}:{toleration.effect}" if toleration.effect else what


def describe_term(term: NodeSelectorTerm) -> str:
    """One node selector term, its requirements joined by ``and``: ``zone In (a, b) and gpus Gt 4``."""
    reqs = [*term.match_expressions, *term.match_fields]
    return " and ".join(
        f"{r.key} {r.operator}" + (f" ({', '.join(r.values)})" if r.values else "") for r in reqs
    )
