"""``muster apply -f SCENARIO``: a scenario's nodes, queues and jobs, published to the running system."""

from __future__ import annotations

import argparse
import re
import time
from typing import TYPE_CHECKING

from muster import runtimes
from muster.cli.common import CHECK_FAILED, fail, print_json, running_endpoints

if TYPE_CHECKING:
    from muster.runtime.settings import Endpoints
    from muster.scenario import ScenarioError
    from muster.scenario.model import Scenario


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "apply",
        description="Nodes join the simulated fleet, queues go to the queue-controller, and every job is "
        "submitted (as the plain muster job kind) in one workload, keeping its scenario name, with the "
        "scenario's topologies, which the system holds from then on for later workloads. Pods the "
        "scenario says already run are handed to the fleet with its nodes: it reports them running since "
        "now + started_at, before the allocator decides anything.",
    )
    p.add_argument("-f", "--file", required=True, help="scenario file (spec/scenario-format.md)")
    p.add_argument("--json", action="store_true", help="print one JSON document")
    p.set_defaults(run=_run)


_JOB_QUEUE = re.compile(r"jobs\[(?P<job>\d+)\]\.queue")


def simulated_only(scenario: Scenario) -> None:
    """Refuse, naming the field, a node or job a live system could not hold: its nodes join the simulated
    fleet, which runs nothing, and its jobs are the muster Job kind, which has nothing to run."""
    from muster.scenario import ScenarioError

    for i, node in enumerate(scenario.nodes):
        if node.runtimes is not None and set(node.runtimes) != {runtimes.SIMULATED}:
            raise ScenarioError(
                f"nodes[{i}].runtimes",
                "apply adds simulated nodes only; `muster agent` on a machine adds a node that runs commands",
            )
    for i, job in enumerate(scenario.jobs):
        if job.runtime != runtimes.SIMULATED:
            raise ScenarioError(
                f"jobs[{i}].runtime", "apply submits simulated jobs only; `muster run` submits a command"
            )


def plan(scenario: Scenario) -> tuple[list, list, list[dict]]:
    """(node specs, queue specs, job manifests) of a scenario, in file order."""
    import msgspec

    from muster.events import NodeRegistered, QueueUpserted
    from muster.grouping.muster_job import manifest
    from muster.scenario import scenario_events

    simulated_only(scenario)
    events = scenario_events(scenario)
    nodes = [e.node for e in events if isinstance(e, NodeRegistered)]
    queues = [e.queue for e in events if isinstance(e, QueueUpserted)]
    jobs = [manifest(msgspec.to_builtins(job)) for job in scenario.jobs]
    return nodes, queues, jobs


def topology_manifests(scenario: Scenario) -> list[dict]:
    """The scenario's ``topologies`` as KAI Topology documents."""
    from muster.scenario.convert import topology_defs
    from muster.topologies import to_manifest

    return [to_manifest(topo) for topo in topology_defs(scenario.topologies).values()]


async def apply(scenario: Scenario, endpoints: Endpoints | None = None) -> dict:
    """Publish ``scenario`` to the system at ``endpoints`` (default: the one this command finds)."""
    from muster.cli.queues_cmd import topological
    from muster.events import QueueRejected
    from muster.scenario.convert import running_events
    from muster.sdk import Client

    nodes, queues, jobs = plan(scenario)
    start = time.time()  # the scenario's t=0 on the live clock
    uid = f"scenario/{scenario.name}/{time.time_ns()}"
    running = running_events(scenario, {n.name: n for n in nodes}, start=start, workload_uid=uid)
    client = await Client.connect(endpoints or running_endpoints())
    try:
        await client.register_nodes(nodes, tag=scenario.name)
        answers = await client.apply_queues(topological(queues))
        rejected = {n: a for n, a in answers.items() if isinstance(a, QueueRejected)}
        submitted = None
        topologies = topology_manifests(scenario)
        if not rejected and (jobs or topologies):
            # The running pods go first: the log then names them before their groups exist, so the
            # allocator never sees a group whose running pods it has not been told of.
            await client.adopt_pods(running)
            # One submission: the allocator sees every job of the scenario at once, as the simulator does;
            # the scenario's Topologies travel with its jobs, and the podgrouper holds them for later ones.
            submitted = await client.submit(topologies + jobs, submitted_at=start, uid=uid)
        return {
            "nodes": len(nodes),
            "queues": sorted(answers),
            "rejected": rejected,
            "jobs": len(jobs),
            "running": sum(len(r.pods) for r in running) if submitted else 0,
            "uid": submitted,
        }
    finally:
        await client.close()


def _queue_meant(error: ScenarioError) -> str:
    """For a job in a queue the file does not have (a scenario's jobs go to its own leaf queues,
    which apply creates before them): the file's leaf queue nearest the one named."""
    from muster.cli.suggest import did_you_mean
    from muster.scenario.errors import from_data
    from muster.scenario.load import read_document
    from muster.scenario.model import Scenario

    at = _JOB_QUEUE.fullmatch(error.path)
    if at is None or not error.message.endswith("is not a queue"):
        return ""
    # The file got as far as its jobs, so it reads as a scenario.
    scenario = from_data(read_document(error.source), Scenario)
    parents = {q.parent for q in scenario.queues}
    leaves = [q.name for q in scenario.queues if q.name not in parents]
    return did_you_mean(scenario.jobs[int(at["job"])].queue, leaves)


def _run(args: argparse.Namespace) -> int:
    import asyncio

    from muster.scenario import ScenarioError, load_scenario

    try:
        scenario = load_scenario(args.file)
    except ScenarioError as exc:
        fail(f"{exc}{_queue_meant(exc)}")
    try:
        simulated_only(scenario)
    except ScenarioError as exc:
        fail(str(exc.in_file(args.file)))
    try:
        result = asyncio.run(apply(scenario))
    except TimeoutError as exc:
        fail(str(exc), CHECK_FAILED)
    rejected = result["rejected"]
    if args.json:
        print_json(
            {**result, "rejected": {n: {"field": a.field, "error": a.error} for n, a in rejected.items()}}
        )
    else:
        for name, answer in sorted(rejected.items()):
            print(f"queue {name}: rejected: {answer.field}: {answer.error}")
        if not rejected:
            print(
                f"applied {scenario.name}: {result['nodes']} nodes, {len(result['queues'])} queues, "
                f"{result['jobs']} jobs, {result['running']} pods already running"
            )
    return CHECK_FAILED if rejected else 0
