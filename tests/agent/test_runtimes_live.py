"""A real agent and a simulated node in one system: each pod goes where it can run, and only there."""

from __future__ import annotations

import json

import pytest
from muster import events as ev

from tests.agent.conftest import events, muster, queues
from tests.agent.test_live import registered
from tests.polling import wait_for

pytestmark = [pytest.mark.nats, pytest.mark.postgres, pytest.mark.slow]

# The simulated node has one GPU, the machine two: binpack alone would send a 1-GPU pod to the former.
FLEET = """
name: fleet
nodes: [{name: sim-a, resources: {gpu: 1, cpu: 8, memory: 32Gi}}]
queues: []
jobs: []
"""
IMAGE_JOB = """
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: from-an-image, labels: {kai.scheduler/queue: team}}
spec:
  pytorchReplicaSpecs:
    Worker:
      replicas: 1
      template: {spec: {containers: [{name: w, image: pytorch/pytorch, resources: {limits: {nvidia.com/gpu: 1}}}]}}
"""


def status(system) -> dict:
    return json.loads(muster(system, "status", "--json").stdout)


def test_a_command_runs_on_the_agents_machine_and_an_image_job_waits_saying_why(system, agents, tmp_path):
    queues(system, "team")
    agents.start("agent-a", 2)
    registered(system, "agent-a")
    (tmp_path / "fleet.yaml").write_text(FLEET)
    muster(system, "apply", "-f", str(tmp_path / "fleet.yaml"))
    registered(system, "sim-a")
    run = muster(system, "run", "--json", "--queue", "team", "--gpus", "1", "--", "/bin/sh", "-c", "exit 0")
    job = json.loads(run.stdout)["job"]
    (tmp_path / "image.yaml").write_text(IMAGE_JOB)
    muster(system, "submit", "-f", str(tmp_path / "image.yaml"))

    def completed():
        return [e for _, e in events(system) if isinstance(e, ev.PodCompleted) and e.job == job]

    (done,) = wait_for(completed, what="the command completed")
    assert done.node == "agent-a"
    waiting = wait_for(
        lambda: (status(system)["jobs"].get("from-an-image") or {}).get("reason"),
        what="the image job's reason",
    )
    assert waiting.startswith("no node can run image pods: the cluster has command and simulated nodes only")
    binds = [e.node for _, e in events(system) if isinstance(e, ev.BindRequested)]
    assert binds == ["agent-a"]
