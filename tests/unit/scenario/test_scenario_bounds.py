"""Scenario files become events within the limits every reader of the bus applies (muster.bounds)."""

from __future__ import annotations

import pytest
from muster.bounds import MAX_CPU_MILLIS, MAX_PODS_PER_GROUP
from muster.scenario import ScenarioError, parse_scenario


def scenario(nodes=None, jobs=None) -> dict:
    return {
        "name": "bounds",
        "nodes": nodes or [{"name": "n1", "resources": {"gpu": 8, "cpu": 64, "memory": "512Gi"}}],
        "queues": [{"name": "q"}],
        "jobs": jobs or [{"name": "j", "queue": "q", "pods": [{"count": 1, "resources": {"gpu": 1}}]}],
    }


def refusal(doc: dict) -> ScenarioError:
    with pytest.raises(ScenarioError) as refused:
        parse_scenario(doc)
    return refused.value


def test_a_priority_past_int32_is_refused_naming_the_job_field():
    error = refusal(scenario(jobs=[{"name": "j", "queue": "q", "priority": 3_000_000_000, "pods": [{}]}]))
    assert (error.path, error.message) == ("jobs[0].priority", "3000000000 is above the limit of 2147483647")


def test_a_node_with_more_cpu_than_any_machine_is_refused_naming_the_node_field():
    cores = MAX_CPU_MILLIS // 1000 + 1
    error = refusal(scenario(nodes=[{"name": "n1", "resources": {"cpu": cores}}]))
    assert error.path == "nodes[0].resources.cpu"
    assert error.message == f"{cores * 1000} millicores is above the limit of {MAX_CPU_MILLIS} millicores"


def test_pod_entries_adding_up_past_the_gang_limit_are_refused_naming_the_pods():
    half = MAX_PODS_PER_GROUP // 2 + 1
    error = refusal(scenario(jobs=[{"name": "j", "queue": "q", "pods": [{"count": half}, {"count": half}]}]))
    assert error.path == "jobs[0].pods"


def test_a_scenario_within_every_limit_parses():
    assert parse_scenario(scenario()).jobs[0].name == "j"
