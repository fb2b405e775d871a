"""Required inter-pod affinity and anti-affinity, as kube-scheduler's InterPodAffinity filter (which KAI
runs, kai-semantics.md §16) decides them.

Pure: a pod's labels and terms, the pods already placed (with their nodes' labels) and every node's labels
in, the nodes the pod may use out. A term selects pods by ``label_selector`` and counts them per *domain*:
a value of the node label ``topology_key``. For a pod P and a node N:

* **affinity**: N has every term's topology key, and each term's domain of N holds a pod that matches
  *all* of P's affinity terms; except that when no placed pod matches them anywhere, a P that matches its
  own terms may go to any node with the keys (the first of a group that wants to be together);
* **anti-affinity**: no term of P whose key N has selects a pod in that domain of N (a node without the
  key is not in any domain of it, so nothing there repels P);
* **existing pods' anti-affinity**: no placed pod has an anti-affinity term that selects P and whose
  domain (on the placed pod's node) N shares.

Preferred terms score instead (``preference_scores``): KAI places a pod on the highest-scoring node it
fits, and this score outweighs every other.

muster has no namespaces: a term selects among the pods of every job.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import NamedTuple

from muster.events import LabelSelector, PodAffinityTerm, WeightedPodAffinityTerm
from muster.placement_predicates import requirement_holds

SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")

Labels = Mapping[str, str]


class PlacedPod(NamedTuple):
    """A pod that counts where it is: running, binding, pipelined, releasing, or placed this cycle."""

    node_labels: Labels
    """The labels of the node it is on."""
    labels: Labels
    anti_affinity: Sequence[PodAffinityTerm] = ()
    affinity: Sequence[PodAffinityTerm] = ()
    preferred_affinity: Sequence[WeightedPodAffinityTerm] = ()
    preferred_anti_affinity: Sequence[WeightedPodAffinityTerm] = ()


def selector_matches(selector: LabelSelector | None, labels: Labels) -> bool:
    """Whether a label selector selects a pod with ``labels``: every requirement holds; no selector
    selects nothing, an empty one everything (as Kubernetes)."""
    if selector is None:
        return False
    return all(requirement_holds(r, labels.get(r.key)) for r in selector.match_expressions)


def matches_all(terms: Sequence[PodAffinityTerm], labels: Labels) -> bool:
    """Whether every term selects a pod with ``labels``."""
    return all(selector_matches(t.label_selector, labels) for t in terms)


def _domain(term: PodAffinityTerm, node_labels: Labels) -> tuple[str, str] | None:
    value = node_labels.get(term.topology_key)
    return None if value is None else (term.topology_key, value)


class Domains(NamedTuple):
    """The domains that decide for one pod: where its affinity is met, where its anti-affinity or a
    placed pod's anti-affinity forbids it."""

    affinity: frozenset[tuple[str, str]]
    """(key, value) holding a pod that matches all of the pod's affinity terms."""
    anti: frozenset[tuple[str, str]]
    """(key, value) holding a pod one of the pod's anti-affinity terms selects."""
    repelled: frozenset[tuple[str, str]]
    """(key, value) where a placed pod's anti-affinity term selects the pod."""


def domains(
    labels: Labels,
    affinity: Sequence[PodAffinityTerm],
    anti_affinity: Sequence[PodAffinityTerm],
    placed: Iterable[PlacedPod],
) -> Domains:
    """What the placed pods make of the domains for a pod with ``labels`` and these terms."""
    near: set[tuple[str, str]] = set()
    anti: set[tuple[str, str]] = set()
    repelled: set[tuple[str, str]] = set()
    for other in placed:
        if affinity and matches_all(affinity, other.labels):
            near.update(d for t in affinity if (d := _domain(t, other.node_labels)) is not None)
        for t in anti_affinity:
            if selector_matches(t.label_selector, other.labels) and (d := _domain(t, other.node_labels)):
                anti.add(d)
        for t in other.anti_affinity:
            if selector_matches(t.label_selector, labels) and (d := _domain(t, other.node_labels)):
                repelled.add(d)
    return Domains(frozenset(near), frozenset(anti), frozenset(repelled))


def node_allowed(
    node_labels: Labels,
    labels: Labels,
    affinity: Sequence[PodAffinityTerm],
    anti_affinity: Sequence[PodAffinityTerm],
    found: Domains,
) -> bool:
    """Whether a pod with ``labels`` and these terms may go to a node with ``node_labels``, given the
    ``domains`` the placed pods make."""
    if affinity:
        keys = [_domain(t, node_labels) for t in affinity]
        if any(d is None for d in keys):
            return False  # every topology key must be on the node
        # Unless it is the first pod of a group with affinity to itself: nothing anywhere matches yet.
        first = not found.affinity and matches_all(affinity, labels)
        if not first and not all(d in found.affinity for d in keys):
            return False
    for t in anti_affinity:
        d = _domain(t, node_labels)
        if d is not None and d in found.anti:
            return False
    return not any(pair in found.repelled for pair in node_labels.items())


def allowed_nodes(
    labels: Labels,
    affinity: Sequence[PodAffinityTerm],
    anti_affinity: Sequence[PodAffinityTerm],
    placed: Iterable[PlacedPod],
    nodes: Sequence[Labels | None],
) -> list[bool]:
    """For each node (by position; None: no node there), whether the pod may go there."""
    found = domains(labels, affinity, anti_affinity, placed)
    return [node is not None and node_allowed(node, labels, affinity, anti_affinity, found) for node in nodes]


HARD_POD_AFFINITY_WEIGHT = 1
"""What a placed pod's *required* affinity term that selects the pod adds to its score: kube-scheduler's
``hardPodAffinityWeight``, at its default (KAI runs the plugin with default arguments)."""


def preference_scores(
    labels: Labels,
    preferred_affinity: Sequence[WeightedPodAffinityTerm],
    preferred_anti_affinity: Sequence[WeightedPodAffinityTerm],
    placed: Iterable[PlacedPod],
    nodes: Sequence[Labels | None],
) -> list[int]:
    """Each node's raw InterPodAffinity score for a pod with ``labels`` (kube-scheduler's, which KAI
    weighs above every other score and never normalises, kai-semantics.md §5.3): per placed pod, in the
    domains of its node, + the weight of each of the pod's preferred affinity terms that selects it,
    - that of each preferred anti-affinity term; + the weight of each of its preferred affinity terms
    that selects the pod, - its preferred anti-affinity ones; + ``HARD_POD_AFFINITY_WEIGHT`` for each of
    its required affinity terms that selects the pod. A node scores the sum over its domains."""
    by_domain: dict[tuple[str, str], int] = {}

    def add(term: PodAffinityTerm, weight: int, selected: Labels, node_labels: Labels) -> None:
        if selector_matches(term.label_selector, selected) and (d := _domain(term, node_labels)):
            by_domain[d] = by_domain.get(d, 0) + weight

    for other in placed:
        for w in preferred_affinity:
            add(w.pod_affinity_term, w.weight, other.labels, other.node_labels)
        for w in preferred_anti_affinity:
            add(w.pod_affinity_term, -w.weight, other.labels, other.node_labels)
        for t in other.affinity:
            add(t, HARD_POD_AFFINITY_WEIGHT, labels, other.node_labels)
        for w in other.preferred_affinity:
            add(w.pod_affinity_term, w.weight, labels, other.node_labels)
        for w in other.preferred_anti_affinity:
            add(w.pod_affinity_term, -w.weight, labels, other.node_labels)
    if not by_domain:
        return [0] * len(nodes)
    return [0 if node is None else sum(by_domain.get(pair, 0) for pair in node.items()) for node in nodes]


def selects_any(terms: Iterable[PodAffinityTerm], labels: Labels) -> bool:
    """Whether one of ``terms`` selects a pod with ``labels``."""
    return any(selector_matches(t.label_selector, labels) for t in terms)


def describe_term(term: PodAffinityTerm) -> str:
    """A term in words: ``app In (db) per zone``."""
    sel = term.label_selector
    if sel is None:
        what = "no pod"
    elif not sel.match_expressions:
        what = "any pod"
    else:
        what = " and ".join(
            f"{r.key} {r.operator}" + (f" ({', '.join(r.values)})" if r.values else "")
            for r in sel.match_expressions
        )
    return f"{what} per {term.topology_key}"
