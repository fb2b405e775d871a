"""A restarted agent and a restarted node monitor start from their snapshots, and still do their work."""

from __future__ import annotations

import asyncio

import pytest
from muster import events as ev
from muster.agent.runtime import consumer_name

from tests.agent.conftest import events, queues
from tests.agent.test_live import alive, of_type, registered, run_probe, starts
from tests.e2e import snapshot_steps
from tests.polling import wait_for

pytestmark = [pytest.mark.nats, pytest.mark.postgres, pytest.mark.slow]

SNAPSHOT_ENV = {"MUSTER_SNAPSHOT_EVERY": "5", "MUSTER_SNAPSHOT_MIN_INTERVAL": "0.5"}


def snapshots_of(system, owner: str, fold: str) -> list[int]:
    return asyncio.run(snapshot_steps.snapshots_of(system, fold, owner))


def restart_nodewatch(system) -> str:
    """The node monitor again, taking snapshots; its log's text so far."""
    system.stop_service("nodewatch")
    return system.start_service("nodewatch", env=SNAPSHOT_ENV).log


def test_a_restarted_agent_and_node_monitor_resume_from_snapshots_and_keep_watch(system, agents, pod_out):
    queues(system, "team")
    nodewatch_log = restart_nodewatch(system)
    agents.start("node-a", 1, env=SNAPSHOT_ENV)
    registered(system, "node-a")
    job = run_probe(system, pod_out, 60, "--queue", "team", "--gpus", "1")
    (first,) = wait_for(lambda: starts(pod_out, job), what="the pod started")
    (bind_seq,) = [seq for seq, e in events(system) if isinstance(e, ev.BindRequested) and e.job == job]
    for owner, fold in (("agent", consumer_name("node-a")), ("nodewatch", "nodewatch")):
        wait_for(
            lambda owner=owner, fold=fold: [s for s in snapshots_of(system, owner, fold) if s > bind_seq],
            what=f"a snapshot of {fold} holding the bind",
        )

    # The agent dies with its pod; restarted from its snapshot, it still knows the placement: it reports
    # the pod gone, and the pod runs again.
    agents.kill("node-a")
    agents.start("node-a", 1, env=SNAPSHOT_ENV)
    wait_for(lambda: of_type(system, ev.PodEvicted, job), what="the restarted agent reported the pod gone")
    second = wait_for(lambda: starts(pod_out, job)[1:], what="the pod started again")[0]
    assert not alive(first["pid"]) and not second["twice"]
    agent_log = system.settings.home / "agent-node-a.log"
    assert "agent-node-a: restored its state at sequence" in agent_log.read_text()

    # The node monitor, restarted from its snapshot, loses no node that heartbeats, and loses the node
    # whose agent is gone, evicting the pod it held, once.
    wait_for(
        lambda: [s for s in snapshots_of(system, "nodewatch", "nodewatch") if s > bind_seq + 5],
        what="a newer snapshot of nodewatch",
    )
    nodewatch_log = restart_nodewatch(system)
    wait_for(
        lambda: "nodewatch: restored its state at sequence" in nodewatch_log.read_text(), what="restored"
    )
    agents.kill("node-a")
    lost = wait_for(lambda: of_type_named(system, ev.NodeLost, "node-a"), what="node-a lost")
    assert len(lost) == 1
    evicted = [e for e in of_type(system, ev.PodEvicted, job) if e.node == "node-a"]
    assert len(evicted) == 2  # the restarted agent's report, then the loss's


def of_type_named(system, kind: type, name: str) -> list:
    return [e for _, e in events(system) if isinstance(e, kind) and e.name == name]
