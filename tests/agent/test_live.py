"""Real processes on agents of this machine: binds start them, evictions stop them, lost agents requeue them."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest
from muster import events as ev
from muster.agent import procs
from muster.bus import NatsBus
from muster.scheduler.actions import REGISTRY as ACTIONS

from tests.agent.conftest import POD_PYTHON, events, muster, queues, read_json_lines
from tests.polling import wait_for

pytestmark = [pytest.mark.nats, pytest.mark.postgres, pytest.mark.slow]

PROBE = str(Path(__file__).with_name("probe.py"))


def run_probe(system, out: Path, seconds: float, *flags: str, code: int = 0) -> str:
    """Submit the probe as a command job with ``muster run``; returns the job's name."""
    result = muster(
        system, "run", "--json", *flags, "--", POD_PYTHON, PROBE, str(out), str(seconds), str(code)
    )
    return json.loads(result.stdout)["job"]


def starts(out: Path, job: str) -> list[dict]:
    return [e for e in read_json_lines(out / "events.jsonl") if e["job"] == job and e["event"] == "start"]


def of_type(system, kind: type, job: str) -> list:
    return [e for _, e in events(system) if isinstance(e, kind) and getattr(e, "job", None) == job]


def test_a_gang_of_commands_runs_on_disjoint_devices_with_its_ranks(system, agents, pod_out):
    queues(system, "team")
    agents.start("node-a", 2)
    agents.start("node-b", 2)
    registered(system, "node-a", "node-b")
    out = pod_out
    job = run_probe(system, out, 0.5, "--queue", "team", "--gpus", "1", "--count", "4")

    done = wait_for(
        lambda: len(of_type(system, ev.PodCompleted, job)) == 4 and starts(out, job), what="4 pods completed"
    )
    seen = {(s["env"]["MUSTER_NODE"], s["env"]["CUDA_VISIBLE_DEVICES"]) for s in done}
    assert len(seen) == 4, f"devices shared: {done}"
    assert sorted(int(s["env"]["RANK"]) for s in done) == [0, 1, 2, 3]
    assert {s["env"]["WORLD_SIZE"] for s in done} == {"4"}
    assert len({(s["env"]["MASTER_ADDR"], s["env"]["MASTER_PORT"]) for s in done}) == 1
    assert not any(s["twice"] for s in done)


def registered(system, *nodes: str) -> None:
    def seen():
        names = {e.node.name for _, e in events(system) if isinstance(e, ev.NodeRegistered)}
        return set(nodes) <= names

    wait_for(seen, what=f"agents of {nodes} registered")


def alive(pid: int) -> bool:
    """Running (a zombie waiting for a parent that will never reap it is not)."""
    return procs.alive(pid, 0)


def test_an_evicted_process_gets_sigterm_and_is_gone_before_the_pod_starts_again(system, agents, pod_out):
    queues(system, "team")
    agents.start("node-a", 1)
    registered(system, "node-a")
    out = pod_out
    job = run_probe(system, out, 60, "--queue", "team", "--gpus", "1")
    (first,) = wait_for(lambda: starts(out, job), what="the pod started")
    bound = wait_for(lambda: of_type(system, ev.PodBound, job), what="PodBound")[0]

    # What the allocator's reclaim or preempt publishes for a victim, under the leader's epoch.
    epoch = max(e.epoch for _, e in events(system) if isinstance(e, ev.LeaderElected))
    publish(system, system.endpoints.subjects.decisions("default"),
            [ev.EvictionRequested(job=job, pod=0, node="node-a", action="reclaim", reason="test", epoch=epoch)])  # fmt: skip

    wait_for(lambda: of_type(system, ev.PodEvicted, job), what="PodEvicted")
    assert any(
        e["event"] == "sigterm" and e["pid"] == first["pid"] for e in read_json_lines(out / "events.jsonl")
    )
    assert not alive(first["pid"])
    # Pending again, it is placed again: a new process, never alongside the old one.
    second = wait_for(lambda: starts(out, job)[1:], what="the pod started again")[0]
    assert second["pid"] != first["pid"] and not second["twice"]
    assert bound.gpus == [0]


def test_a_process_that_ignores_sigterm_is_killed_after_its_grace_period(system, agents, pod_out):
    queues(system, "team")
    agents.start("node-a", 1)
    registered(system, "node-a")
    out = pod_out
    script = f"import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); open({str(out / 'pid')!r}, 'w').write(str(__import__('os').getpid())); time.sleep(60)"
    job = json.loads(
        muster(
            system,
            "run",
            "--json",
            "--queue",
            "team",
            "--grace-period",
            "1",
            "--",
            POD_PYTHON,
            "-c",
            script,
        ).stdout
    )["job"]
    wait_for(lambda: (out / "pid").exists() and (out / "pid").read_text(), what="the process started")
    pid = int((out / "pid").read_text())
    muster(system, "cancel", job)
    wait_for(lambda: of_type(system, ev.PodEvicted, job), what="PodEvicted after SIGKILL")
    assert not alive(pid)


def test_an_exit_code_is_reported_as_pod_failed_and_zero_as_pod_completed(system, agents, pod_out):
    queues(system, "team")
    agents.start("node-a", 2)
    registered(system, "node-a")
    out = pod_out
    bad = run_probe(system, out, 0.1, "--queue", "team", "--gpus", "1", code=3)
    good = run_probe(system, out, 0.1, "--queue", "team", "--gpus", "1")
    (failed,) = wait_for(lambda: of_type(system, ev.PodFailed, bad), what="PodFailed")
    assert failed.exit_code == 3 and failed.node == "node-a"
    wait_for(lambda: of_type(system, ev.PodCompleted, good), what="PodCompleted")
    assert not of_type(system, ev.PodCompleted, bad)


def test_logs_show_what_a_pod_printed(system, agents, pod_out):
    queues(system, "team")
    agents.start("node-a", 1)
    registered(system, "node-a")
    out = pod_out
    job = run_probe(system, out, 0.1, "--queue", "team", "--gpus", "1")
    wait_for(lambda: of_type(system, ev.PodCompleted, job), what="PodCompleted")
    assert "hello from rank 0" in muster(system, "logs", job).stdout
    assert "hello from rank 0" in muster(system, "logs", job, "--pod", "0", "--follow").stdout
    missing = muster(system, "logs", "no-such-job", check=False)
    assert missing.returncode == 1 and "no job no-such-job" in missing.stderr


def test_a_killed_agent_loses_its_node_and_its_gang_runs_again_elsewhere(system, agents, pod_out):
    queues(system, "team")
    agents.start("node-a", 2)
    agents.start("node-b", 2)
    registered(system, "node-a", "node-b")
    out = pod_out
    job = run_probe(system, out, 60, "--queue", "team", "--gpus", "1", "--count", "2")
    first = wait_for(lambda: len(starts(out, job)) == 2 and starts(out, job), what="the gang started")
    (node,) = {s["env"]["MUSTER_NODE"] for s in first}
    other = "node-b" if node == "node-a" else "node-a"

    agents.kill(node)

    again = wait_for(
        lambda: starts(out, job)[2:] if len(starts(out, job)) == 4 else None,
        timeout=30,
        what="the gang restarted",
    )
    assert {s["env"]["MUSTER_NODE"] for s in again} == {other}
    assert not any(s["twice"] for s in again)
    assert not any(alive(s["pid"]) for s in first)
    lost = [e for _, e in events(system) if isinstance(e, ev.NodeLost)]
    assert [e.name for e in lost] == [node]


def publish(system, subject: str, batch: list) -> None:
    async def send() -> None:
        bus = await NatsBus.connect(system.endpoints.nats_url, system.endpoints.subjects, service="test")
        try:
            await bus.publish(subject, batch, msg_id=f"test:{time.time_ns()}")
        finally:
            await bus.close()

    asyncio.run(send())


# The agent's own word is under test, not the monitor's: a restart on a loaded machine can outlast the
# suite's 3 s node timeout, which would declare the node lost first.
@pytest.mark.parametrize("node_timeout", [60.0])
def test_an_agent_that_restarts_reports_the_pods_that_died_with_it_and_they_run_again(
    system, agents, pod_out
):
    queues(system, "team")
    agents.start("node-a", 1)
    registered(system, "node-a")
    out = pod_out
    job = run_probe(system, out, 60, "--queue", "team", "--gpus", "1")
    (first,) = wait_for(lambda: starts(out, job), what="the pod started")

    agents.kill("node-a")
    agents.start("node-a", 1)

    wait_for(lambda: of_type(system, ev.PodEvicted, job), what="the restarted agent reported the pod gone")
    second = wait_for(lambda: starts(out, job)[1:], what="the pod started again")[0]
    assert not alive(first["pid"]) and not second["twice"]
    assert not [e for _, e in events(system) if isinstance(e, ev.NodeLost)]


@pytest.mark.skipif("reclaim" not in ACTIONS, reason="the allocator has no reclaim action yet")
def test_a_reclaim_stops_the_borrowers_process_and_the_owners_job_starts(system, agents, pod_out):
    queues(system, "owner", quota=1)
    queues(system, "borrower", quota=0)
    agents.start("node-a", 1)
    registered(system, "node-a")
    out = pod_out
    borrowed = run_probe(system, out, 60, "--queue", "borrower", "--gpus", "1")
    (victim,) = wait_for(lambda: starts(out, borrowed), what="the borrower's pod started")

    owned = run_probe(system, out, 60, "--queue", "owner", "--gpus", "1")

    (started,) = wait_for(lambda: starts(out, owned), what="the owner's pod started")
    assert any(
        e["event"] == "sigterm" and e["pid"] == victim["pid"] for e in read_json_lines(out / "events.jsonl")
    )
    assert not alive(victim["pid"])
    assert started["env"]["CUDA_VISIBLE_DEVICES"] == victim["env"]["CUDA_VISIBLE_DEVICES"]
