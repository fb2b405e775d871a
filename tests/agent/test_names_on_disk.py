"""What an agent names on disk after jobs: one folder and one log per (owner, job, pod), each bounded.

Issue #25: team-a's `coll x` and team-b's `coll_x` shared a pod folder (starting one wiped the
other's HOME, and `muster logs` printed the other team's output); a 300-character job name
made the agent fail inside its own error handler, after which no pod on the node started.
"""

from __future__ import annotations

import asyncio
import itertools
import os

from muster import events as ev
from muster.agent.files import pod_stem
from muster.agent.procs import Processes
from muster.agent.runtime import Agent, AgentConfig
from muster.agent.sandbox import PodFolders
from muster.bus import Delivery, MemoryBus
from muster.events import decode_envelope

NODE = "node-a"
NAME_MAX = 255  # bytes of one file name on Linux file systems
OWNERS = ["", "team-a", "team-b"]
JOBS = ["coll x", "coll_x", "coll-x", "coll-x-1", "coll/x", "a" * 300, "a" * 300 + "b", "é" * 200]


def test_no_two_pods_of_different_owner_job_or_index_share_a_file_name():
    pods = list(itertools.product(OWNERS, JOBS, [0, 1, 10]))
    stems = {pod_stem(owner, job, pod) for owner, job, pod in pods}
    assert len(stems) == len(pods)


def test_a_pods_file_names_fit_any_file_system_whatever_the_name():
    for owner, job in itertools.product(OWNERS, JOBS):
        stem = pod_stem(owner, job, 65535)
        assert len(f"{stem}.exit".encode()) <= NAME_MAX and "/" not in stem and not stem.startswith(".")


def processes(tmp_path) -> Processes:
    procs = Processes(tmp_path / "agent", NODE, PodFolders(tmp_path / "pods", None))
    procs.folders.prepare()
    return procs


async def run_pod(procs: Processes, key, owner: str, script: str) -> None:
    proc = await procs.start(key, 1, ["sh", "-c", script], {}, {}, None, [], 0.0, owner=owner)
    assert await proc.wait() == 0


async def test_a_job_name_used_again_by_another_team_reads_none_of_the_first_teams_log(tmp_path):
    procs = processes(tmp_path)
    key = ("coll-x", 0)
    await run_pod(procs, key, "team-a", "echo team-a-secret > $HOME/notes; echo team-a-output")
    procs.forget(key)  # team-a's job was cancelled; team-b takes the name
    await run_pod(procs, key, "team-b", "ls $HOME; echo team-b-output")
    team_b = procs.log_path(key, "team-b").read_text()
    assert "team-b-output" in team_b and "team-a" not in team_b
    assert "team-a-output" in procs.log_path(key, "team-a").read_text()


async def test_a_job_name_longer_than_a_file_name_still_runs_and_logs(tmp_path):
    procs = processes(tmp_path)
    key = ("a" * 300, 0)
    await run_pod(procs, key, "team-a", "echo started in $HOME")
    assert f"started in {procs.folders.root}" in procs.log_path(key).read_text()


def command_job(name: str) -> ev.PodGroupCreated:
    pod = ev.PodSpec(count=1, resources=ev.Resources(gpu=1), command=["true"])
    return ev.PodGroupCreated(name=name, queue="team", pods=[pod], owner="team-a")


def agent_with(tmp_path, bus: MemoryBus, *jobs: str) -> Agent:
    """An agent of ``NODE`` that has read each job bound to device ``i`` of its node."""
    spec = ev.NodeSpec(name=NODE, resources=ev.Resources(gpu=len(jobs)))
    agent = Agent(AgentConfig(node=spec, home=tmp_path / "home", pods_dir=tmp_path / "pods"), bus)
    events: list[ev.Event] = [command_job(job) for job in jobs]
    events += [ev.BindRequested(job=job, pod=0, node=NODE, gpus=[i]) for i, job in enumerate(jobs)]
    asyncio.run(agent.handle([Delivery("muster.podgroups", 1, events)], live=False))
    return agent


def reported(bus: MemoryBus) -> list[ev.Event]:
    return [event for m in bus.messages for event in decode_envelope(m.data)]


def step_until_settled(agent: Agent, bus: MemoryBus) -> None:
    """Let the agent act, its pods end and its reports come back to it through the log, until it is quiet."""

    async def settle() -> None:
        read = 0
        while True:
            await agent.step()
            await asyncio.gather(*agent.tasks)
            if read == len(bus.messages):
                return
            back = [Delivery(m.subject, 100 + m.seq, decode_envelope(m.data)) for m in bus.messages[read:]]
            read = len(bus.messages)
            await agent.handle(back, live=True)

    asyncio.run(settle())


def test_a_long_job_name_before_another_on_a_node_stops_neither_from_starting(tmp_path):
    # Names from a log written before names were checked reach the agent as they were.
    bus = MemoryBus()
    agent = agent_with(tmp_path, bus, "a" * 300, "later")
    step_until_settled(agent, bus)
    ended = [(e.job, type(e).__name__) for e in reported(bus) if not isinstance(e, ev.PodBound)]
    assert sorted(ended) == [("a" * 300, "PodCompleted"), ("later", "PodCompleted")]


def test_a_pod_that_cannot_start_is_reported_failed_even_when_its_log_cannot_be_written(tmp_path):
    bus = MemoryBus()
    agent = agent_with(tmp_path, bus, "train")
    # Neither the pod's folder nor its log can be made: where both belong are files.
    for where in (agent.procs.folders.root, agent.procs.logs):
        os.rename(where, f"{where}.gone")
        where.write_text("")
    step_until_settled(agent, bus)
    *_, failed = reported(bus)
    assert isinstance(failed, ev.PodFailed) and failed.exit_code == 127
