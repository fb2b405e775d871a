"""Required pod affinity and anti-affinity as kube-scheduler's InterPodAffinity filter decides them (KAI
runs it, kai-semantics.md §16): ``muster.pod_affinity`` on plain data."""

from __future__ import annotations

from muster import events as ev
from muster.pod_affinity import PlacedPod, allowed_nodes, preference_scores, selector_matches

ZONE_A = {"zone": "a", "host": "a1"}
ZONE_A2 = {"zone": "a", "host": "a2"}
ZONE_B = {"zone": "b", "host": "b1"}
NO_ZONE = {"host": "x1"}
NODES = [ZONE_A, ZONE_A2, ZONE_B, NO_ZONE]


def req(key: str, op: str, *values: str) -> ev.LabelSelectorRequirement:
    return ev.LabelSelectorRequirement(key=key, operator=op, values=values)


def term(key: str = "zone", *reqs: ev.LabelSelectorRequirement) -> ev.PodAffinityTerm:
    return ev.PodAffinityTerm(label_selector=ev.LabelSelector(match_expressions=reqs), topology_key=key)


def app(name: str) -> ev.PodAffinityTerm:
    return term("zone", req("app", "In", name))


def test_no_selector_selects_no_pod_and_an_empty_one_every_pod():
    assert not selector_matches(None, {"app": "db"})
    assert selector_matches(ev.LabelSelector(), {})


def test_not_in_selects_a_pod_without_the_label():
    assert selector_matches(ev.LabelSelector(match_expressions=(req("app", "NotIn", "db"),)), {})


def test_affinity_allows_only_the_domains_holding_a_selected_pod():
    placed = [PlacedPod(ZONE_A, {"app": "db"})]
    assert allowed_nodes({}, [app("db")], [], placed, NODES) == [True, True, False, False]


def test_affinity_counts_a_pod_only_if_it_matches_every_term():
    terms = [app("db"), term("host", req("tier", "Exists"))]
    placed = [PlacedPod(ZONE_A, {"app": "db"}), PlacedPod(ZONE_B, {"tier": "x"})]
    assert allowed_nodes({}, terms, [], placed, NODES) == [False, False, False, False]


def test_the_first_pod_of_a_self_affine_group_goes_anywhere_with_the_key():
    assert allowed_nodes({"app": "db"}, [app("db")], [], [], NODES) == [True, True, True, False]


def test_a_pod_whose_own_labels_miss_its_term_waits_when_nothing_matches():
    assert allowed_nodes({"app": "web"}, [app("db")], [], [], NODES) == [False, False, False, False]


def test_anti_affinity_keeps_the_pod_out_of_a_selected_pods_domain_only():
    placed = [PlacedPod(ZONE_A, {"app": "db"})]
    assert allowed_nodes({}, [], [app("db")], placed, NODES) == [False, False, True, True]


def test_a_placed_pods_anti_affinity_repels_the_pods_it_selects():
    placed = [PlacedPod(ZONE_B, {}, (app("web"),))]
    assert allowed_nodes({"app": "web"}, [], [], placed, NODES) == [True, True, False, True]
    assert allowed_nodes({"app": "db"}, [], [], placed, NODES) == [True, True, True, True]


def test_a_slot_without_a_node_is_never_allowed():
    assert allowed_nodes({}, [], [], [], [None, ZONE_A]) == [False, True]


# Preferred terms score (kai-semantics.md §5.3); the cases of KAI's podaffinity_test.go ("Preferred Pod
# Affinity"): one node labelled by the term's key, one pod on it.
NODE = {"node-label": "node-1"}
MINE = {"my-label": "a"}


def weighted(weight: int = 10) -> ev.WeightedPodAffinityTerm:
    selector = ev.LabelSelector(match_expressions=(req("my-label", "In", "a"),))
    return ev.WeightedPodAffinityTerm(
        weight=weight,
        pod_affinity_term=ev.PodAffinityTerm(label_selector=selector, topology_key="node-label"),
    )


def test_no_terms_anywhere_score_zero():
    assert preference_scores({}, [], [], [PlacedPod(NODE, {})], [NODE]) == [0]


def test_a_placed_pods_preferred_affinity_that_does_not_select_the_pod_scores_zero():
    placed = [PlacedPod(NODE, MINE, preferred_affinity=(weighted(),))]
    assert preference_scores({}, [], [], placed, [NODE]) == [0]


def test_matching_preferred_affinity_counts_both_ways():
    placed = [PlacedPod(NODE, MINE, preferred_affinity=(weighted(),))]
    assert preference_scores(MINE, [weighted()], [], placed, [NODE]) == [20]


def test_matching_preferred_anti_affinity_counts_both_ways_against():
    placed = [PlacedPod(NODE, MINE, preferred_anti_affinity=(weighted(),))]
    assert preference_scores(MINE, [], [weighted()], placed, [NODE]) == [-20]


def test_a_placed_pods_required_affinity_that_selects_the_pod_adds_the_hard_weight_in_its_domain_only():
    placed = [PlacedPod(ZONE_A, {}, affinity=(app("db"),))]
    assert preference_scores({"app": "db"}, [], [], placed, NODES) == [1, 1, 0, 0]
