"""What the node of ``muster agent`` declares it runs."""

from __future__ import annotations

from muster import runtimes
from muster.agent.machine import Gpus, node_spec


def test_an_agents_node_declares_it_runs_commands_and_no_images():
    spec = node_spec("box", pool="default", labels={}, gpus=Gpus(1, 0), cpu=1000, memory=2**30)
    assert spec.runtimes == ["command"]
    assert runtimes.can_run(spec, "command")
    assert not runtimes.can_run(spec, "image") and not runtimes.can_run(spec, "simulated")
