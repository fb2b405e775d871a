"""Read a scenario (YAML or JSON) into a checked ``Scenario``.

Everything a file can get wrong is reported as a ``ScenarioError`` whose
path names the field (``jobs[2].pods[0].resources.gpu``): unknown keys,
wrong types, bad quantities, duplicate names, references to queues or
nodes that do not exist, running pods that do not fit where they are said
to run.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from muster import events as ev
from muster.bounded_yaml import YamlTooBig, load_yaml_documents
from muster.bounds import MAX_NESTING
from muster.scenario import convert as cv
from muster.scenario import model as m
from muster.scenario.errors import ScenarioError, from_data, join
from muster.tolerances import EPS
from muster.topologies import TopologyDef
from muster.usage_window import window_error

MAX_VALUES = 50_000_000
"""Values in one file once YAML aliases are expanded: a 10,000-node cluster with 100,000 jobs is a few
million; the bound stops a few lines of anchors from standing for billions."""


def read_document(path: str | Path) -> Any:
    """The parsed contents of a YAML or JSON file (JSON is YAML)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ScenarioError("", f"cannot read file: {exc.strerror or exc}", str(path)) from None
    except UnicodeDecodeError as exc:
        raise ScenarioError("", f"not UTF-8 text: {exc.reason} at byte {exc.start}", str(path)) from None
    try:
        documents = load_yaml_documents(text, max_depth=MAX_NESTING, max_nodes=MAX_VALUES)
    except YamlTooBig as exc:
        raise ScenarioError(exc.path, exc.message, str(path)) from None
    except yaml.YAMLError as exc:
        raise ScenarioError("", f"not valid YAML or JSON: {exc}", str(path)) from None
    if len(documents) > 1:
        raise ScenarioError("", f"one document expected, found {len(documents)}", str(path))
    return documents[0] if documents else None


def load_scenario(path: str | Path) -> m.Scenario:
    """The scenario in ``path``; ``ScenarioError`` names the file and field."""
    data = read_document(path)
    try:
        return parse_scenario(data)
    except ScenarioError as exc:
        raise exc.in_file(str(path)) from None


def parse_scenario(data: Any) -> m.Scenario:
    """A scenario from parsed YAML/JSON data, checked in full."""
    if not isinstance(data, dict):
        raise ScenarioError("", "a scenario is a mapping with name, nodes, queues and jobs")
    scenario = from_data(data, m.Scenario)
    if not scenario.name:
        raise ScenarioError("name", "must not be empty")
    _check_config(scenario.config)
    nodes = _check_nodes(scenario.nodes)
    leaves = _check_queues(scenario.queues)
    topologies = cv.topology_defs(scenario.topologies)
    _check_jobs(scenario.jobs, nodes, leaves, {q.name for q in scenario.queues}, topologies)
    if scenario.expect is not None:
        _check_expect(scenario.expect, scenario)
    return scenario


def load_queues(path: str | Path) -> list[ev.QueueSpec]:
    """Queues from a file holding a list of queues in the scenario format,
    or a mapping ``{queues: [...]}``; ``order`` follows the file."""
    data = read_document(path)
    try:
        return parse_queues(data)
    except ScenarioError as exc:
        raise exc.in_file(str(path)) from None


def parse_queues(data: Any) -> list[ev.QueueSpec]:
    """Queues from parsed data (a list, or a mapping with only ``queues``).
    Parents may live outside the file (an update to a running system), but
    names must be unique and parents within the file must not form a cycle."""
    base = ""
    if isinstance(data, dict):
        unknown = sorted(set(data) - {"queues"})
        if unknown:
            raise ScenarioError(str(unknown[0]), f"unknown key {unknown[0]!r}")
        data, base = data.get("queues", []), "queues"
    if not isinstance(data, list):
        raise ScenarioError(base, "expected a list of queues")
    queues = from_data(data, list[m.Queue], base)
    specs = [cv.queue_spec(q, i, join(base, i)) for i, q in enumerate(queues)]
    _unique([q.name for q in queues], base, "queue")
    _check_hierarchy(queues, base, require_parents=False)
    return specs


# -- checks -------------------------------------------------------------------


def _unique(names: list[str], base: str, what: str) -> None:
    seen: set[str] = set()
    for i, name in enumerate(names):
        if name in seen:
            raise ScenarioError(join(join(base, i), "name"), f"duplicate {what} name {name!r}")
        seen.add(name)


def _check_config(cfg: m.Config) -> None:
    if cfg.max_cycles < 1:
        raise ScenarioError("config.max_cycles", f"must be at least 1, got {cfg.max_cycles}")
    if cfg.time_step <= 0:
        raise ScenarioError("config.time_step", f"must be positive, got {cfg.time_step}")
    if cfg.reclaimer_utilization_multiplier < 1.0:
        raise ScenarioError(
            "config.reclaimer_utilization_multiplier",
            f"must be >= 1.0, got {cfg.reclaimer_utilization_multiplier}",
        )
    # The allocator's own check; imported here, as `allocator_config` does, so that grouping a manifest
    # (which reads scenario jobs) does not load the scheduler.
    from muster.scheduler.config import DEFAULT_MIN_RUNTIMES, seconds_error

    for field in DEFAULT_MIN_RUNTIMES:
        wrong = seconds_error(getattr(cfg, field))
        if wrong is not None:
            raise ScenarioError(f"config.{field}", wrong)
    seen: set[str] = set()
    for i, action in enumerate(cfg.actions):
        if action in seen:
            raise ScenarioError(f"config.actions[{i}]", f"action {action!r} is listed twice")
        seen.add(action)
    if cfg.fairness is not None:
        f = cfg.fairness
        if f.usage_window <= 0:
            raise ScenarioError("config.fairness.usage_window", "must be positive")
        wrong = window_error(f.window_type, f.usage_window, f.tumbling_window_start, f.cron_string)
        if wrong is not None:
            raise ScenarioError(f"config.fairness.{wrong[0]}", wrong[1])
        if cfg.fairness.half_life < 0:
            raise ScenarioError("config.fairness.half_life", "must not be negative")
        if cfg.fairness.k < 0:
            raise ScenarioError("config.fairness.k", "must not be negative")


def _check_nodes(nodes: list[m.Node]) -> dict[str, ev.NodeSpec]:
    specs = {}
    for i, node in enumerate(nodes):
        spec = cv.node_spec(node, join("nodes", i))
        if node.name in specs:
            raise ScenarioError(join(join("nodes", i), "name"), f"duplicate node name {node.name!r}")
        specs[node.name] = spec
    return specs


def _check_hierarchy(queues: list[m.Queue], base: str, require_parents: bool) -> None:
    parents = {q.name: q.parent for q in queues}
    for i, queue in enumerate(queues):
        where = join(join(base, i), "parent")
        if queue.parent is not None and queue.parent not in parents and require_parents:
            raise ScenarioError(where, f"no queue named {queue.parent!r}")
        seen = {queue.name}
        parent = queue.parent
        while parent is not None and parent in parents:
            if parent in seen:
                raise ScenarioError(where, f"queue {queue.name!r} is its own ancestor")
            seen.add(parent)
            parent = parents[parent]


def _check_queues(queues: list[m.Queue]) -> set[str]:
    """Checks the queues; returns the names of the leaf queues."""
    for i, queue in enumerate(queues):
        cv.queue_spec(queue, i, join("queues", i))
    _unique([q.name for q in queues], "queues", "queue")
    _check_hierarchy(queues, "queues", require_parents=True)
    parents = {q.parent for q in queues if q.parent is not None}
    return {q.name for q in queues if q.name not in parents}


def _check_jobs(
    jobs: list[m.Job],
    nodes: dict[str, ev.NodeSpec],
    leaves: set[str],
    queues: set[str],
    topologies: dict[str, TopologyDef],
) -> None:
    _unique([j.name for j in jobs], "jobs", "job")
    ledger = _Ledger(nodes)
    for i, job in enumerate(jobs):
        path = join("jobs", i)
        group = cv.job_to_podgroup(job, path=path, topologies=topologies)
        if job.queue not in leaves:
            what = "a parent queue; jobs go to leaf queues" if job.queue in queues else "not a queue"
            raise ScenarioError(join(path, "queue"), f"{job.queue!r} is {what}")
        pods = cv.expand(group.pods)
        if len(job.running) > len(pods):
            raise ScenarioError(
                join(path, "running"), f"{len(job.running)} running entries for {len(pods)} pods"
            )
        for k, entry in enumerate(job.running):
            ledger.place(pods[k].resources, entry, join(join(path, "running"), k))


class _Ledger:
    """What the file's running pods already hold, to refuse over-commits."""

    def __init__(self, nodes: dict[str, ev.NodeSpec]) -> None:
        self.nodes = nodes
        self.used: dict[str, list[float]] = {n: [0, 0] for n in nodes}
        self.ext: dict[str, dict[str, int]] = {n: {} for n in nodes}
        self.devices: dict[str, list[float]] = {n: [0.0] * int(s.resources.gpu) for n, s in nodes.items()}

    def place(self, request: ev.Resources, entry: m.Running, path: str) -> None:
        node = self.nodes.get(entry.node)
        if node is None:
            raise ScenarioError(join(path, "node"), f"no node named {entry.node!r}")
        gpus, where = entry.gpus, join(path, "gpus")
        devices = self.devices[entry.node]
        shared = 0 < request.gpu < 1 or (request.gpu_memory > 0 and request.gpu == 0)
        wanted = 1 if shared else int(request.gpu)
        if len(gpus) != wanted:
            raise ScenarioError(where, f"the pod holds {wanted} device(s), {len(gpus)} listed")
        if len(set(gpus)) != len(gpus):
            raise ScenarioError(where, "a device is listed twice")
        for g in gpus:
            if not 0 <= g < len(devices):
                raise ScenarioError(where, f"node {entry.node!r} has no device {g}")
        share = cv.gpu_share(request, node) if shared else 1.0
        if shared and request.gpu_memory and not node.resources.gpu_memory:
            raise ScenarioError(where, f"node {entry.node!r} gives no gpu_memory for a gpu_memory pod")
        for g in gpus:
            if devices[g] + share > 1 + EPS:
                raise ScenarioError(where, f"device {g} of node {entry.node!r} is already taken")
        used = self.used[entry.node]
        cap = node.resources
        if used[0] + request.cpu > cap.cpu or used[1] + request.memory > cap.memory:
            raise ScenarioError(path, f"running pods over-commit cpu or memory of node {entry.node!r}")
        for name, amount in sorted(request.extended.items()):
            if self.ext[entry.node].get(name, 0) + amount > cap.extended.get(name, 0):
                raise ScenarioError(path, f"running pods over-commit {name} of node {entry.node!r}")
        for g in gpus:
            devices[g] += share
        used[0] += request.cpu
        used[1] += request.memory
        for name, amount in request.extended.items():
            self.ext[entry.node][name] = self.ext[entry.node].get(name, 0) + amount


def _check_expect(expect: m.Expect, scenario: m.Scenario) -> None:
    jobs = {j.name for j in scenario.jobs}
    queues = {q.name for q in scenario.queues}
    nodes = {n.name for n in scenario.nodes}
    for key in ("running", "pending", "preempted", "completed"):
        for i, name in enumerate(getattr(expect, key) or []):
            if name not in jobs:
                raise ScenarioError(f"expect.{key}[{i}]", f"no job named {name!r}")
    for job, placed in expect.placements.items():
        if job not in jobs:
            raise ScenarioError(f"expect.placements.{job}", f"no job named {job!r}")
        for i, node in enumerate(placed):
            if node not in nodes:
                raise ScenarioError(f"expect.placements.{job}[{i}]", f"no node named {node!r}")
    for key in ("fair_share", "allocated"):
        for queue, amounts in getattr(expect, key).items():
            if queue not in queues:
                raise ScenarioError(f"expect.{key}.{queue}", f"no queue named {queue!r}")
            for resource, value in amounts.items():
                cv.expected_amount(resource, value, f"expect.{key}.{queue}.{resource}")
    for job in expect.reasons:
        if job not in jobs:
            raise ScenarioError(f"expect.reasons.{job}", f"no job named {job!r}")
