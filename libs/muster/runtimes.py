"""What a pod needs from a node to run, what a node can run, and the one rule that matches them.

A pod group says what its pods are (``PodGroupCreated.runtime``):

- ``command``: processes (muster's Command kind, ``muster run``), which ``muster agent`` starts;
- ``image``: containers from images (framework manifests whose containers name an image), which only
  a node with a container runtime can start;
- ``simulated``: nothing that runs (muster's scenario Job kind, ``muster apply``, ``muster simulate``,
  a manifest that names no image), which the simulated fleet pretends to run.

A node says which of these it runs (``NodeSpec.runtimes``). The allocator places a pod only on a node
that runs its kind (``can_run``, through ``NodeTable.eligible``), and the simulated fleet refuses a bind
that breaks the rule, so a pod shown running is one that runs.

Defaults keep old logs meaning what they meant. A group from before groups said what they need has
runtime ``""``: it may use any node, as it could when it was decided, so a replay of an old log places
every old job exactly where it was placed, whatever its nodes declare. A node from before nodes said
what they run (``runtimes`` empty) runs what its backend runs: commands on a ``muster agent`` node
(labelled ``muster.dev/backend: agent``), simulated pods on any other, which the simulated fleet binds.
"""

from __future__ import annotations

from muster import events as ev

COMMAND = "command"
IMAGE = "image"
SIMULATED = "simulated"
RUNTIMES = (COMMAND, IMAGE, SIMULATED)
ANY = ""
"""The runtime of a group from before groups declared one: every node runs it."""

BACKEND_LABEL = "muster.dev/backend"
"""Which backend runs a node's pods: ``agent`` for ``muster agent``; absent, the simulated fleet."""
AGENT_BACKEND = "agent"


def is_agent_node(spec: ev.NodeSpec) -> bool:
    """Whether ``muster agent`` (not the binder's simulated fleet) runs this node's pods."""
    return spec.labels.get(BACKEND_LABEL) == AGENT_BACKEND


def node_runtimes(spec: ev.NodeSpec) -> tuple[str, ...]:
    """What the node runs: what it declares, else what its backend runs."""
    if spec.runtimes:
        return tuple(spec.runtimes)
    return (COMMAND,) if is_agent_node(spec) else (SIMULATED,)


def can_run(spec: ev.NodeSpec, runtime: str) -> bool:
    """Whether a pod of ``runtime`` may run on the node ``spec`` describes."""
    return runtime == ANY or runtime in node_runtimes(spec)
