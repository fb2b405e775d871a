"""Loading scenario files: defaults, quantities, and errors that name the field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from muster.scenario import ScenarioError, load_scenario, parse_scenario


def scenario(**overrides):
    base = {
        "name": "example",
        "nodes": [
            {"name": "node-a", "resources": {"gpu": 8, "gpu_memory": "80Gi", "cpu": 64, "memory": "512Gi"}}
        ],
        "queues": [
            {"name": "dept", "resources": {"gpu": {"quota": 8}}},
            {"name": "team-a", "parent": "dept", "resources": {"gpu": {"quota": 4}}},
        ],
        "jobs": [{"name": "train-1", "queue": "team-a", "pods": [{"count": 2, "resources": {"gpu": 1}}]}],
    }
    base.update(overrides)
    return base


def job(**fields):
    return {"name": "j", "queue": "team-a", "pods": [{"resources": {"gpu": 1}}], **fields}


def error_of(data) -> ScenarioError:
    with pytest.raises(ScenarioError) as info:
        parse_scenario(data)
    return info.value


def test_a_minimal_scenario_gets_every_config_default():
    s = parse_scenario({"name": "empty"})
    assert s.config.placement.gpu == "binpack" and s.config.placement.cpu == "binpack"
    assert s.config.actions == ["allocate", "consolidate", "reclaim", "preempt", "stale_gang_eviction"]
    assert (s.config.max_cycles, s.config.time_step, s.config.stale_gang_grace) == (100, 1.0, 60.0)
    assert s.config.reclaimer_utilization_multiplier == 1.0
    assert s.config.fairness is None


def test_yaml_and_json_files_load_alike(tmp_path: Path):
    data = scenario()
    (tmp_path / "a.yaml").write_text(yaml.safe_dump(data))
    (tmp_path / "a.json").write_text(json.dumps(data))
    assert load_scenario(tmp_path / "a.yaml") == load_scenario(tmp_path / "a.json")


def test_an_unknown_key_is_named_with_its_path():
    data = scenario(jobs=[job(pods=[{"resources": {"gpu": 1}, "nodeSelector": {}}])])
    err = error_of(data)
    assert err.path == "jobs[0].pods[0].nodeSelector"
    assert "unknown key 'nodeSelector'" in err.message


def test_an_unknown_top_level_key_is_an_error():
    assert error_of(scenario(node=[])).path == "node"


def test_a_missing_required_field_is_named():
    err = error_of(scenario(jobs=[{"queue": "team-a", "pods": [{}]}]))
    assert err.path == "jobs[0].name"
    assert "required" in err.message


def test_a_bad_quantity_names_the_resource_path():
    err = error_of(scenario(jobs=[job(pods=[{"resources": {"gpu": 1, "memory": "12Qi"}}])]))
    assert err.path == "jobs[0].pods[0].resources.memory"
    assert "12Qi" in err.message


def test_a_gpu_request_above_one_must_be_whole():
    err = error_of(scenario(jobs=[job(pods=[{"resources": {"gpu": 1.5}}])]))
    assert err.path == "jobs[0].pods[0].resources.gpu"


def test_a_pod_cannot_ask_for_a_fraction_and_gpu_memory_at_once():
    err = error_of(scenario(jobs=[job(pods=[{"resources": {"gpu": 0.5, "gpu_memory": "10Gi"}}])]))
    assert err.path == "jobs[0].pods[0].resources.gpu_memory"


def test_a_wrong_type_is_named():
    err = error_of(scenario(jobs=[job(pods=[{"count": "two"}])]))
    assert err.path == "jobs[0].pods[0].count"


def test_an_unknown_placement_is_refused():
    err = error_of(scenario(config={"placement": {"gpu": "pack"}}))
    assert err.path == "config.placement.gpu"


def test_an_unknown_action_is_refused():
    assert error_of(scenario(config={"actions": ["allocate", "steal"]})).path == "config.actions[1]"


@pytest.mark.parametrize(
    ("config", "path"),
    [
        ({"max_cycles": 0}, "config.max_cycles"),
        ({"time_step": 0}, "config.time_step"),
        ({"reclaimer_utilization_multiplier": 0.5}, "config.reclaimer_utilization_multiplier"),
        ({"actions": ["allocate", "allocate"]}, "config.actions[1]"),
        ({"fairness": {"half_life": -1}}, "config.fairness.half_life"),
    ],
)
def test_out_of_range_config_values_are_refused(config, path):
    assert error_of(scenario(config=config)).path == path


def test_duplicate_node_names_are_refused():
    node = {"name": "node-a", "resources": {"gpu": 1}}
    assert error_of(scenario(nodes=[node, node])).path == "nodes[1].name"


def test_duplicate_job_names_are_refused():
    assert error_of(scenario(jobs=[job(), job()])).path == "jobs[1].name"


def test_a_parent_must_exist():
    queues = [{"name": "team-a", "parent": "nowhere"}]
    assert error_of(scenario(queues=queues, jobs=[])).path == "queues[0].parent"


def test_a_queue_cannot_be_its_own_ancestor():
    queues = [{"name": "a", "parent": "b"}, {"name": "b", "parent": "a"}]
    assert error_of(scenario(queues=queues, jobs=[])).path == "queues[0].parent"


def test_a_job_must_name_an_existing_queue():
    err = error_of(scenario(jobs=[job(queue="team-z")]))
    assert err.path == "jobs[0].queue"
    assert "not a queue" in err.message


def test_a_job_cannot_go_to_a_parent_queue():
    err = error_of(scenario(jobs=[job(queue="dept")]))
    assert err.path == "jobs[0].queue"
    assert "leaf" in err.message


def test_min_available_cannot_exceed_the_pods():
    assert error_of(scenario(jobs=[job(min_available=2)])).path == "jobs[0].min_available"


def test_a_running_pod_must_name_a_known_node():
    err = error_of(scenario(jobs=[job(running=[{"node": "node-z", "gpus": [0]}])]))
    assert err.path == "jobs[0].running[0].node"


def test_a_running_pod_lists_as_many_devices_as_it_asks_for():
    err = error_of(scenario(jobs=[job(running=[{"node": "node-a", "gpus": [0, 1]}])]))
    assert err.path == "jobs[0].running[0].gpus"


def test_running_pods_cannot_share_a_whole_device():
    jobs = [
        job(name="first", running=[{"node": "node-a", "gpus": [3]}]),
        job(name="second", running=[{"node": "node-a", "gpus": [3]}]),
    ]
    err = error_of(scenario(jobs=jobs))
    assert err.path == "jobs[1].running[0].gpus"
    assert "taken" in err.message


def test_running_fractions_share_a_device_up_to_one():
    half = [{"resources": {"gpu": 0.5}}]
    jobs = [job(name=f"half-{i}", pods=half, running=[{"node": "node-a", "gpus": [0]}]) for i in range(3)]
    assert parse_scenario(scenario(jobs=jobs[:2])).jobs[1].running[0].gpus == [0]
    assert error_of(scenario(jobs=jobs)).path == "jobs[2].running[0].gpus"


def test_more_running_entries_than_pods_are_refused():
    running = [{"node": "node-a", "gpus": [0]}, {"node": "node-a", "gpus": [1]}]
    assert error_of(scenario(jobs=[job(running=running)])).path == "jobs[0].running"


def test_expect_must_name_known_jobs_and_queues():
    assert error_of(scenario(expect={"running": ["nope"]})).path == "expect.running[0]"
    assert error_of(scenario(expect={"fair_share": {"nope": {"gpu": 1}}})).path == "expect.fair_share.nope"
    assert (
        error_of(scenario(expect={"placements": {"train-1": ["node-z"]}})).path
        == "expect.placements.train-1[0]"
    )


def test_an_expected_amount_must_be_a_quantity():
    err = error_of(scenario(expect={"allocated": {"team-a": {"memory": "lots"}}}))
    assert err.path == "expect.allocated.team-a.memory"


def test_a_file_error_names_the_file(tmp_path: Path):
    path = tmp_path / "bad.yaml"
    path.write_text("name: bad\njobs: [{name: j}]\n")
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    assert str(info.value) == f"{path}: jobs[0].queue: required field is missing"


def test_a_file_that_is_not_yaml_is_a_scenario_error(tmp_path: Path):
    path = tmp_path / "broken.yaml"
    path.write_text("name: [unclosed\n")
    with pytest.raises(ScenarioError, match="not valid YAML"):
        load_scenario(path)


def test_a_missing_file_is_a_scenario_error(tmp_path: Path):
    with pytest.raises(ScenarioError, match="cannot read"):
        load_scenario(tmp_path / "absent.yaml")


def test_a_file_nested_past_the_bound_names_the_deepest_field_it_reached(tmp_path: Path):
    path = tmp_path / "deep.yaml"
    path.write_text("name: deep\nnodes: " + "[" * 500 + "]" * 500 + "\n")
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    assert info.value.path == "nodes" + "[0]" * 63
    assert "nested more than 64 levels deep" in info.value.message


def test_aliases_that_stand_for_too_many_values_are_refused(tmp_path: Path):
    # Ten levels of ten aliases each stand for 10**10 values: a few hundred bytes of text.
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 11)]
    path = tmp_path / "bomb.yaml"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(ScenarioError, match="values once its aliases are expanded"):
        load_scenario(path)


def test_a_file_of_several_documents_is_refused(tmp_path: Path):
    path = tmp_path / "two.yaml"
    path.write_text("name: one\n---\nname: two\n")
    with pytest.raises(ScenarioError, match="one document expected, found 2"):
        load_scenario(path)
