"""Scenario -> events: order, base units, defaults of the job and queue fields."""

from __future__ import annotations

from pathlib import Path

import pytest
from muster import events as ev
from muster.scenario import (
    ScenarioError,
    allocator_config,
    job_to_podgroup,
    load_queues,
    parse_queues,
    parse_scenario,
    scenario_events,
)

SCENARIO = {
    "name": "convert",
    "nodes": [
        {
            "name": "node-b",
            "pool": "p1",
            "resources": {"gpu": 2, "gpu_memory": "40Gi", "cpu": 16, "memory": "64Gi"},
        },
        {"name": "node-a", "resources": {"gpu": 8, "cpu": "500m", "memory": 1024, "rdma/ib": 2}},
    ],
    "queues": [
        {"name": "z-dept", "resources": {"cpu": {"quota": 2, "limit": "4000m"}, "memory": {"quota": "1Gi"}}},
        {"name": "a-team", "parent": "z-dept", "priority": 150, "min_runtime": {"preempt": 60}},
    ],
    "jobs": [
        {
            "name": "train",
            "queue": "a-team",
            "pods": [
                {"count": 2, "resources": {"gpu": 0.5, "memory": "2Gi"}},
                {"resources": {"gpu_memory": "10Gi"}},
            ],
            "running": [
                {"node": "node-b", "gpus": [0]},
                {"node": "node-b", "gpus": [0]},
                {"node": "node-b", "gpus": [1]},
            ],
            "started_at": -30,
        },
        {
            "name": "serve",
            "queue": "a-team",
            "priority_class": "inference",
            "pods": [{"resources": {"cpu": 1}}],
        },
    ],
}


def events():
    return scenario_events(parse_scenario(SCENARIO))


def test_events_come_as_nodes_then_their_running_pods_then_queues_then_groups():
    kinds = [type(e).__name__ for e in events()]
    assert kinds == ["NodeRegistered"] * 2 + ["AdoptPods"] + ["QueueUpserted"] * 2 + ["PodGroupCreated"] * 2


def test_node_capacity_is_in_base_units():
    node = events()[1].node
    assert node.resources == ev.Resources(gpu=8.0, cpu=500, memory=1024, extended={"rdma/ib": 2})
    assert events()[0].node.resources.gpu_memory == 40 * 2**30
    assert events()[0].node.pool == "p1"


def test_queues_keep_file_order_and_base_units():
    queues = [e.queue for e in events() if isinstance(e, ev.QueueUpserted)]
    assert [(q.name, q.order) for q in queues] == [("z-dept", 0), ("a-team", 1)]
    dept = queues[0].resources
    assert dept["cpu"] == ev.QueueResource(quota=2000.0, over_quota_weight=1.0, limit=4000.0)
    assert dept["memory"].quota == float(2**30)


def test_queue_resources_default_to_gpu_quota_zero_and_no_other_constraint():
    team = [e.queue for e in events() if isinstance(e, ev.QueueUpserted)][1]
    assert team.resources == {"gpu": ev.QueueResource(quota=0.0, over_quota_weight=1.0, limit=-1.0)}
    assert team.priority == 150
    assert team.min_runtime == ev.MinRuntime(preempt=60.0)


def test_queue_priority_defaults_to_100():
    assert [e.queue for e in events() if isinstance(e, ev.QueueUpserted)][0].priority == 100


def test_a_job_without_priority_is_a_preemptible_train_job_of_all_its_pods():
    group = [e for e in events() if isinstance(e, ev.PodGroupCreated)][0]
    assert (group.priority_class, group.priority, group.preemptible, group.min_available) == (
        "train",
        50,
        True,
        3,
    )
    assert group.pods[0].resources == ev.Resources(gpu=0.5, memory=2 * 2**30)
    assert group.pods[1].resources == ev.Resources(gpu_memory=10 * 2**30)


def test_an_inference_job_is_not_preemptible():
    group = [e for e in events() if isinstance(e, ev.PodGroupCreated)][1]
    assert (group.priority, group.preemptible) == (125, False)
    assert group.pods[0].resources.cpu == 1000


def test_running_entries_are_handed_to_the_fleet_in_pod_order_with_their_start():
    (adopt,) = [e for e in events() if isinstance(e, ev.AdoptPods)]
    assert (adopt.pool, adopt.workload_uid) == ("p1", "")
    assert [(p.job, p.pod, p.node, p.gpus, p.started_at) for p in adopt.pods] == [
        ("train", 0, "node-b", [0], -30.0),
        ("train", 1, "node-b", [0], -30.0),
        ("train", 2, "node-b", [1], -30.0),
    ]


def test_no_event_of_a_scenario_is_a_decision():
    assert not [e for e in events() if isinstance(e, ev.BindRequested | ev.PodBound)]


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"priority": 80}, (80, True)),
        ({"priority_class": "build"}, (100, False)),
        ({"priority_class": "inference", "priority": 40}, (40, True)),
        ({"priority": 50, "preemptible": False}, (50, False)),
        ({"priority_class": "build-preemptible"}, (75, True)),
    ],
)
def test_priority_wins_over_class_and_preemptible_follows_priority(fields, expected):
    group = job_to_podgroup({"name": "j", "queue": "q", "pods": [{}], **fields})
    assert (group.priority, group.preemptible) == expected


def test_job_to_podgroup_names_the_bad_field_under_the_given_path():
    with pytest.raises(ScenarioError) as info:
        job_to_podgroup({"name": "j", "queue": "q", "pods": [{"resources": {"cpu": "x"}}]}, path="spec")
    assert info.value.path == "spec.pods[0].resources.cpu"


def test_job_to_podgroup_carries_topology_duration_and_min_runtime():
    group = job_to_podgroup(
        {
            "name": "j",
            "queue": "q",
            "pods": [{"count": 4}],
            "min_available": 2,
            "topology": {"required": "rack"},
            "duration": 30,
            "min_runtime": 10,
            "submitted_at": 5,
        }
    )
    assert group.topology == ev.Topology(required="rack")
    assert (group.duration, group.min_runtime, group.submitted_at, group.min_available) == (30, 10, 5, 2)


def test_job_to_podgroup_carries_its_own_preemption_delay_and_stale_grace():
    group = job_to_podgroup(
        {"name": "j", "queue": "q", "pods": [{}], "preemption_delay": 300, "stale_gang_grace": -1}
    )
    assert (group.preemption_delay, group.stale_gang_grace) == (300, -1)


def test_a_job_without_them_leaves_both_to_the_allocator():
    group = job_to_podgroup({"name": "j", "queue": "q", "pods": [{}]})
    assert (group.preemption_delay, group.stale_gang_grace) == (None, None)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("preemption_delay", -5),
        ("preemption_delay", float("inf")),
        ("stale_gang_grace", float("nan")),
        ("min_runtime", -1),
        ("min_runtime", float("nan")),
    ],
)
def test_a_timing_that_is_no_number_of_seconds_is_refused_naming_it(field, value):
    with pytest.raises(ScenarioError) as info:
        job_to_podgroup({"name": "j", "queue": "q", "pods": [{}], field: value})
    assert info.value.path == f"job.{field}"


@pytest.mark.parametrize("value", [-1.0, float("nan")])
def test_a_queue_min_runtime_that_is_no_number_of_seconds_is_refused_naming_it(value):
    with pytest.raises(ScenarioError) as info:
        parse_queues([{"name": "a", "min_runtime": {"reclaim": value}}])
    assert info.value.path.endswith("min_runtime.reclaim")


def test_a_topology_needs_a_label():
    with pytest.raises(ScenarioError) as info:
        job_to_podgroup({"name": "j", "queue": "q", "pods": [{}], "topology": {}})
    assert info.value.path == "job.topology"


def test_load_queues_reads_a_list_or_a_mapping(tmp_path: Path):
    (tmp_path / "list.yaml").write_text("- {name: a}\n- {name: b, parent: a, resources: {gpu: {quota: 2}}}\n")
    (tmp_path / "map.yaml").write_text(
        "queues:\n  - {name: a}\n  - {name: b, parent: a, resources: {gpu: {quota: 2}}}\n"
    )
    from_list, from_map = load_queues(tmp_path / "list.yaml"), load_queues(tmp_path / "map.yaml")
    assert from_list == from_map
    assert [(q.name, q.parent, q.order, q.resources["gpu"].quota) for q in from_list] == [
        ("a", None, 0, 0.0),
        ("b", "a", 1, 2.0),
    ]


def test_load_queues_names_the_bad_field(tmp_path: Path):
    (tmp_path / "q.yaml").write_text("queues:\n  - {name: a, resources: {gpu: {quota: -2}}}\n")
    with pytest.raises(ScenarioError) as info:
        load_queues(tmp_path / "q.yaml")
    assert info.value.path == "queues[0].resources.gpu.quota"


def test_load_queues_allows_parents_outside_the_file(tmp_path: Path):
    (tmp_path / "q.yaml").write_text("- {name: team, parent: existing-dept}\n")
    assert load_queues(tmp_path / "q.yaml")[0].parent == "existing-dept"


def test_allocator_config_follows_the_scenario_config():
    cfg = allocator_config(
        parse_scenario(
            {
                "name": "c",
                "config": {
                    "placement": {"cpu": "spread"},
                    "actions": ["allocate", "reclaim"],
                    "reclaimer_utilization_multiplier": 1.5,
                    "stale_gang_grace": 5,
                    "fairness": {"k": 2},
                },
            }
        )
    )
    assert (cfg.placement_gpu, cfg.placement_cpu, cfg.actions) == (
        "binpack",
        "spread",
        ("allocate", "reclaim"),
    )
    assert (cfg.reclaimer_utilization_multiplier, cfg.stale_gang_grace, cfg.fairness.k) == (1.5, 5, 2)


def test_gpu_spread_placement_turns_consolidation_off():
    cfg = allocator_config(parse_scenario({"name": "c", "config": {"placement": {"gpu": "spread"}}}))
    assert "consolidate" not in cfg.actions
    assert cfg.actions == ("allocate", "reclaim", "preempt", "stale_gang_eviction")
