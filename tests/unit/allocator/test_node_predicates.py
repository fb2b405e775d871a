"""Taints, tolerations and required node affinity (kai-semantics.md §16): the rules, and every way the
allocator places a pod keeping to them."""

from __future__ import annotations

import pytest
from muster import events as ev
from muster import placement_predicates as pp
from muster.scheduler.state import pod_req
from muster.scheduler.state.nodes import NodeTable

from .builders import allocator, gang_job, gpu_nodes, queue

RESERVED = ev.Taint(key="gpu", value="reserved", effect="NoSchedule")


def tol(**kw) -> ev.Toleration:
    return ev.Toleration(**kw)


def req(key: str, operator: str, *values: str) -> ev.NodeSelectorRequirement:
    return ev.NodeSelectorRequirement(key=key, operator=operator, values=values)


def term(*exprs: ev.NodeSelectorRequirement, fields: tuple[ev.NodeSelectorRequirement, ...] = ()):
    return ev.NodeSelectorTerm(match_expressions=exprs, match_fields=fields)


def binds(out) -> set[tuple[str, int, str]]:
    return {(d.job, d.pod, d.node) for d in out.decisions if isinstance(d, ev.BindRequested)}


# -- tolerations -----------------------------------------------------------------------------------


def test_an_equal_toleration_accepts_only_the_same_key_and_value():
    assert pp.tolerates(tol(key="gpu", value="reserved", effect="NoSchedule"), RESERVED)
    assert not pp.tolerates(tol(key="gpu", value="shared", effect="NoSchedule"), RESERVED)
    assert not pp.tolerates(tol(key="zone", value="reserved", effect="NoSchedule"), RESERVED)


def test_an_exists_toleration_accepts_any_value_of_its_key():
    assert pp.tolerates(tol(key="gpu", operator="Exists"), RESERVED)
    assert not pp.tolerates(tol(key="zone", operator="Exists"), RESERVED)


def test_an_exists_toleration_without_a_key_accepts_every_taint():
    assert pp.tolerates(tol(operator="Exists"), ev.Taint(key="anything", effect="NoExecute"))


def test_a_toleration_naming_an_effect_accepts_only_taints_of_that_effect():
    assert not pp.tolerates(tol(key="gpu", value="reserved", effect="NoExecute"), RESERVED)
    assert pp.tolerates(tol(key="gpu", value="reserved"), RESERVED)  # no effect: every effect


def test_no_schedule_and_no_execute_taints_repel_but_prefer_no_schedule_does_not():
    taints = [RESERVED, ev.Taint(key="b", effect="NoExecute"), ev.Taint(key="c", effect="PreferNoSchedule")]
    assert pp.untolerated([], taints) == taints[:2]
    assert pp.untolerated([tol(operator="Exists", effect="NoSchedule")], taints) == [taints[1]]


# -- required node affinity ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("requirement", "labels", "holds"),
    [
        (req("zone", "In", "a", "b"), {"zone": "b"}, True),
        (req("zone", "In", "a"), {"zone": "c"}, False),
        (req("zone", "In", "a"), {}, False),
        (req("zone", "NotIn", "a"), {"zone": "c"}, True),
        (req("zone", "NotIn", "a"), {}, True),
        (req("zone", "NotIn", "a"), {"zone": "a"}, False),
        (req("zone", "Exists"), {"zone": ""}, True),
        (req("zone", "Exists"), {}, False),
        (req("zone", "DoesNotExist"), {}, True),
        (req("zone", "DoesNotExist"), {"zone": "a"}, False),
        (req("cores", "Gt", "8"), {"cores": "16"}, True),
        (req("cores", "Gt", "8"), {"cores": "8"}, False),
        (req("cores", "Lt", "8"), {"cores": "4"}, True),
        (req("cores", "Lt", "8"), {"cores": "many"}, False),
        (req("cores", "Gt", "8"), {}, False),
    ],
)
def test_each_operator_holds_as_kubernetes_defines_it(requirement, labels, holds):
    assert pp.requirement_holds(requirement, labels.get(requirement.key)) is holds


def test_requirements_of_a_term_are_anded_and_terms_are_ored():
    zone_a_big = term(req("zone", "In", "a"), req("cores", "Gt", "8"))
    zone_b = term(req("zone", "In", "b"))
    assert pp.affinity_matches([zone_a_big, zone_b], "n", {"zone": "a", "cores": "16"})
    assert not pp.affinity_matches([zone_a_big, zone_b], "n", {"zone": "a", "cores": "4"})
    assert pp.affinity_matches([zone_a_big, zone_b], "n", {"zone": "b"})


def test_match_fields_select_a_node_by_name():
    by_name = term(fields=(req("metadata.name", "In", "node-1"),))
    assert pp.affinity_matches([by_name], "node-1", {})
    assert not pp.affinity_matches([by_name], "node-2", {})


def test_an_empty_term_matches_no_node_and_no_terms_match_every_node():
    assert not pp.affinity_matches([term()], "n", {"zone": "a"})
    assert pp.affinity_matches([], "n", {})


# -- the node table --------------------------------------------------------------------------------


def usable(table: NodeTable, spec: ev.PodSpec) -> list[str]:
    mask = table.eligible("default", pod_req(spec, "pods[0]").spec_key)
    return sorted(name for name, node in table.nodes.items() if mask[node.slot])


def test_a_tainted_node_is_eligible_only_for_pods_that_tolerate_it():
    table = NodeTable()
    for e in [*gpu_nodes(1, prefix="plain"), *gpu_nodes(1, prefix="tainted", taints=[RESERVED])]:
        table.set(e.node)
    assert usable(table, ev.PodSpec()) == ["plain-0"]
    assert usable(table, ev.PodSpec(tolerations=[tol(key="gpu", value="reserved")])) == [
        "plain-0",
        "tainted-0",
    ]


def test_node_affinity_narrows_the_eligible_nodes_together_with_the_selector():
    table = NodeTable()
    for e in [
        *gpu_nodes(2, prefix="a", labels={"zone": "a"}),
        *gpu_nodes(1, prefix="b", labels={"zone": "b", "rack": "r1"}),
    ]:
        table.set(e.node)
    not_a = [term(req("zone", "NotIn", "a"))]
    assert usable(table, ev.PodSpec(node_affinity=not_a)) == ["b-0"]
    assert usable(table, ev.PodSpec(node_affinity=not_a, node_selector={"rack": "r2"})) == []


# -- allocate, in the batch kernel and in Python ---------------------------------------------------

TAINTED = [
    *gpu_nodes(1, gpus=2, prefix="reserved", taints=[RESERVED]),
    *gpu_nodes(1, gpus=4, prefix="open"),
    queue("team", gpu_quota=8),
]


def test_binpack_keeps_an_untolerating_job_off_the_fuller_tainted_node():
    out = allocator(TAINTED, gang_job("team", 2, name="plain")).cycle(0.0, cycle=1)
    assert binds(out) == {("plain", 0, "open-0"), ("plain", 1, "open-0")}


def test_a_tolerating_job_may_use_the_tainted_node():
    out = allocator(
        TAINTED, gang_job("team", 2, name="owner", tolerations=[tol(key="gpu", operator="Exists")])
    ).cycle(0.0, cycle=1)
    assert binds(out) == {("owner", 0, "reserved-0"), ("owner", 1, "reserved-0")}


def test_many_plain_jobs_placed_by_the_batch_kernel_keep_off_the_tainted_node():
    jobs = [gang_job("team", 1, name=f"j{i}", submitted_at=i) for i in range(6)]
    out = allocator(TAINTED, *jobs).cycle(0.0, cycle=1)
    assert {node for _, _, node in binds(out)} == {"open-0"}
    assert len(binds(out)) == 4


def test_an_elastic_job_placed_pod_by_pod_keeps_to_its_affinity():
    out = allocator(
        gpu_nodes(1, gpus=4, prefix="a", labels={"zone": "a"}),
        gpu_nodes(1, gpus=2, prefix="b", labels={"zone": "b"}),
        queue("team", gpu_quota=8),
        gang_job("team", 3, min_available=1, name="e", node_affinity=[term(req("zone", "In", "a"))]),
    ).cycle(0.0, cycle=1)
    assert binds(out) == {("e", 0, "a-0"), ("e", 1, "a-0"), ("e", 2, "a-0")}


def test_a_job_that_tolerates_no_node_waits_and_names_the_taint():
    out = allocator(
        gpu_nodes(2, gpus=4, taints=[RESERVED]), queue("team", gpu_quota=8), gang_job("team", 1, name="j")
    ).cycle(0.0, cycle=1)
    assert binds(out) == set()
    assert out.reasons["j"] == (
        "pod does not fit: no node in pool default tolerates it "
        "(taints it does not tolerate: gpu=reserved:NoSchedule)"
    )


def test_a_job_whose_affinity_no_node_meets_waits_and_says_so():
    out = allocator(
        gpu_nodes(2, gpus=4, labels={"zone": "a"}),
        queue("team", gpu_quota=8),
        gang_job("team", 1, name="j", node_affinity=[term(req("zone", "In", "b"))]),
    ).cycle(0.0, cycle=1)
    assert binds(out) == set()
    assert out.reasons["j"] == (
        "pod does not fit: no schedulable node in pool default matches its required node affinity"
    )


def test_jobs_alike_but_for_their_tolerations_do_not_share_a_failed_shape():
    out = allocator(
        gpu_nodes(1, gpus=4, taints=[RESERVED]),
        queue("team", gpu_quota=8),
        gang_job("team", 1, name="a-plain"),
        gang_job("team", 1, name="b-tolerating", submitted_at=1, tolerations=[tol(operator="Exists")]),
    ).cycle(0.0, cycle=1)
    assert binds(out) == {("b-tolerating", 0, "node-0")}
    assert "gpu=reserved:NoSchedule" in out.reasons["a-plain"]
