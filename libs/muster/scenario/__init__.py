"""Scenario files (spec/scenario-format.md): load, check, turn into events."""

from muster.scenario.convert import allocator_config, job_to_podgroup, scenario_events
from muster.scenario.errors import ScenarioError
from muster.scenario.load import load_queues, load_scenario, parse_queues, parse_scenario

__all__ = [
    "ScenarioError",
    "allocator_config",
    "job_to_podgroup",
    "load_queues",
    "load_scenario",
    "parse_queues",
    "parse_scenario",
    "scenario_events",
]
