"""Scenario files choose KAI's usage window type, reclaim min-runtime resolution and default min-runtimes;
errors name the field."""

from __future__ import annotations

import pytest
from muster.scenario import ScenarioError, allocator_config, parse_scenario
from muster.usage_window import UsageWindow


def with_config(**config):
    return {"name": "example", "config": config}


def error_path(data) -> str:
    with pytest.raises(ScenarioError) as info:
        parse_scenario(data)
    return info.value.path


def test_a_cron_window_reaches_the_allocator_as_written():
    s = parse_scenario(with_config(fairness={"window_type": "cron", "cron_string": "0 0 * * MON", "k": 0.5}))
    assert allocator_config(s).fairness.window == UsageWindow(type="cron", size=604800.0, cron="0 0 * * MON")


def test_a_tumbling_window_reaches_the_allocator_with_its_start_and_size():
    fairness = {"window_type": "tumbling", "tumbling_window_start": -60, "usage_window": 3600}
    window = allocator_config(parse_scenario(with_config(fairness=fairness))).fairness.window
    assert window == UsageWindow(type="tumbling", size=3600.0, tumbling_start=-60.0)


def test_a_file_without_a_window_type_keeps_the_sliding_window():
    s = parse_scenario(with_config(fairness={"usage_window": 60}))
    assert allocator_config(s).fairness.window == UsageWindow(size=60.0)


@pytest.mark.parametrize(
    ("fairness", "path"),
    [
        ({"window_type": "hopping"}, "config.fairness.window_type"),
        ({"window_type": "tumbling"}, "config.fairness.tumbling_window_start"),
        ({"tumbling_window_start": 0}, "config.fairness.tumbling_window_start"),
        ({"window_type": "cron"}, "config.fairness.cron_string"),
        ({"window_type": "cron", "cron_string": "0 0 0 * * *"}, "config.fairness.cron_string"),
        ({"window_type": "cron", "cron_string": "0 0 L * *"}, "config.fairness.cron_string"),
    ],
)
def test_a_wrong_window_is_refused_naming_the_field(fairness, path):
    assert error_path(with_config(fairness=fairness)) == path


def test_reclaim_min_runtime_is_resolved_at_the_lowest_common_ancestor_unless_the_file_says_queue():
    assert allocator_config(parse_scenario(with_config())).reclaim_min_runtime_resolution == "lca"
    chosen = allocator_config(parse_scenario(with_config(reclaim_min_runtime_resolution="queue")))
    assert chosen.reclaim_min_runtime_resolution == "queue"
    assert error_path(with_config(reclaim_min_runtime_resolution="nearest")) == (
        "config.reclaim_min_runtime_resolution"
    )


def test_default_min_runtimes_reach_the_allocator_as_written():
    s = parse_scenario(with_config(default_preempt_min_runtime=600, default_reclaim_min_runtime=30))
    config = allocator_config(s)
    assert (config.default_preempt_min_runtime, config.default_reclaim_min_runtime) == (600.0, 30.0)


@pytest.mark.parametrize("field", ["default_preempt_min_runtime", "default_reclaim_min_runtime"])
@pytest.mark.parametrize("value", [-1, float("nan"), float("inf")])
def test_a_default_min_runtime_that_is_no_length_of_time_is_refused_naming_the_field(field, value):
    assert error_path(with_config(**{field: value})) == f"config.{field}"
