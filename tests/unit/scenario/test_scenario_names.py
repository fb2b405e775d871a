"""Scenario and queue files name jobs, queues and nodes by the rule every reader of the bus applies."""

from __future__ import annotations

import pytest
from muster.queues.kai_queue import QueueManifestError, parse_kai_queues
from muster.scenario import ScenarioError, parse_queues, parse_scenario

BAD = ["coll x", "coll_x", "Team-A", "gpu/0", "a\nb", "a\u202eb", "x" * 254]


def scenario(node: str = "n1", queue: str = "q", job: str = "j", parent: str | None = None) -> dict:
    queues = [{"name": "root"}, {"name": queue, "parent": parent or "root"}]
    return {
        "name": "names",
        "nodes": [{"name": node, "resources": {"gpu": 8}}],
        "queues": queues,
        "jobs": [{"name": job, "queue": queue, "pods": [{"count": 1, "resources": {"gpu": 1}}]}],
    }


def refusal(doc: dict) -> ScenarioError:
    with pytest.raises(ScenarioError) as refused:
        parse_scenario(doc)
    return refused.value


@pytest.mark.parametrize("name", BAD)
@pytest.mark.parametrize(
    ("field", "path"), [("job", "jobs[0].name"), ("node", "nodes[0].name"), ("queue", "queues[1].name")]
)
def test_a_name_kubernetes_refuses_is_refused_naming_the_field(name, field, path):
    error = refusal(scenario(**{field: name}))
    assert error.path == path and "is not a valid" in error.message


def test_a_parent_queue_is_named_by_the_same_rule():
    with pytest.raises(ScenarioError) as refused:
        parse_queues([{"name": "q", "parent": "dept a"}])
    assert refused.value.path == "[0].parent" and "is not a valid queue name" in refused.value.message


def test_valid_names_load():
    assert (
        parse_scenario(scenario(node="gpu-0.rack-1", queue="team-a", job="coll-x.v2")).jobs[0].name
        == "coll-x.v2"
    )


@pytest.mark.parametrize(("spec", "path"), [({"metadata": {"name": "Team_A"}}, "[0].metadata.name"),
                                            ({"metadata": {"name": "a"}, "spec": {"parentQueue": "dept a"}}, "[0].spec.parentQueue")])  # fmt: skip
def test_a_kai_queue_manifest_names_its_queues_by_the_rule_naming_the_field(spec, path):
    with pytest.raises(QueueManifestError) as refused:
        parse_kai_queues([{"apiVersion": "scheduling.run.ai/v2", "kind": "Queue", **spec}])
    assert refused.value.path == path and "is not a valid queue name" in refused.value.message
