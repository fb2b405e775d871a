"""What a scenario's nodes run and what its jobs are (docs/scenario-format-extensions.md), and ``apply``,
which adds only what the simulated fleet can hold."""

from __future__ import annotations

import pytest
from muster import events as ev
from muster.cli.apply_cmd import plan
from muster.scenario import ScenarioError, parse_scenario, scenario_events
from muster.scenario import model as m
from muster.scenario.expect import check


def scenario(node: dict | None = None, job: dict | None = None, **top) -> dict:
    return {
        "name": "runtimes",
        "nodes": [{"name": "node-a", "resources": {"gpu": 2}, **(node or {})}],
        "queues": [{"name": "team"}],
        "jobs": [{"name": "j", "queue": "team", "pods": [{"resources": {"gpu": 1}}], **(job or {})}],
        **top,
    }


def events(data: dict) -> tuple[ev.NodeSpec, ev.PodGroupCreated]:
    out = scenario_events(parse_scenario(data))
    (node,) = [e.node for e in out if isinstance(e, ev.NodeRegistered)]
    (group,) = [e for e in out if isinstance(e, ev.PodGroupCreated)]
    return node, group


def error_of(data: dict) -> ScenarioError:
    with pytest.raises(ScenarioError) as info:
        parse_scenario(data)
    return info.value


def test_a_scenario_node_runs_simulated_pods_and_a_job_is_simulated_unless_they_say_otherwise():
    node, group = events(scenario())
    assert (node.runtimes, group.runtime) == (["simulated"], "simulated")


def test_a_node_and_a_job_say_what_they_run_and_are():
    node, group = events(scenario(node={"runtimes": ["command", "image"]}, job={"runtime": "command"}))
    assert (node.runtimes, group.runtime) == (["command", "image"], "command")


@pytest.mark.parametrize(
    ("data", "path"),
    [
        (scenario(node={"runtimes": []}), "nodes[0].runtimes"),
        (scenario(node={"runtimes": ["gpu"]}), "nodes[0].runtimes[0]"),
        (scenario(job={"runtime": "docker"}), "jobs[0].runtime"),
        (scenario(expect={"reasons": {"nope": "x"}}), "expect.reasons.nope"),
    ],
)
def test_a_bad_runtime_or_reason_expectation_is_named(data, path):
    assert error_of(data).path == path


def test_an_expected_reason_holds_when_the_jobs_reason_says_it():
    seen = {"jobs": {"j": {"status": "pending", "pods": [], "reason": "no node can run command pods: ..."}}}
    assert check(m.Expect(reasons={"j": "no node can run command pods"}), seen) == []
    (failure,) = check(m.Expect(reasons={"j": "the cluster has no GPUs"}), seen)
    assert str(failure) == (
        "expect.reasons.j: expected the cluster has no GPUs, saw no node can run command pods: ..."
    )


@pytest.mark.parametrize(
    ("data", "path"),
    [
        (scenario(node={"runtimes": ["command"]}), "nodes[0].runtimes"),
        (scenario(job={"runtime": "image"}), "jobs[0].runtime"),
    ],
)
def test_apply_refuses_what_the_simulated_fleet_would_only_pretend_to_run(data, path):
    with pytest.raises(ScenarioError) as info:
        plan(parse_scenario(data))
    assert info.value.path == path


def test_apply_takes_nodes_that_say_they_are_simulated():
    nodes, _, jobs = plan(parse_scenario(scenario(node={"runtimes": ["simulated"]})))
    assert nodes[0].runtimes == ["simulated"] and len(jobs) == 1
