"""Which agent nodes have gone silent, as a pure function of the log and a clock.

Agent nodes (``muster.dev/backend: agent``) heartbeat with NodeUpdated. A
node unheard for longer than the timeout is declared lost with one envelope:
``NodeLost``, ``PodEvicted`` for every pod still on it (so the allocator,
which already knows PodEvicted, makes them pending again and their gangs
return to the queue), then ``NodeRemoved`` (so nothing is placed there
until the agent registers again). A bind that reaches a lost or removed
agent node gets ``BindFailed``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from muster import events as ev
from muster.agent.plan import PodKey, is_agent_node
from muster.fact_admission import UNCHECKED, refusal


@dataclass
class Watched:
    pool: str
    last_seen: float
    lost: bool = False
    removed: bool = False
    losses: int = 0
    """NodeLost events seen for this node: names the next loss in message ids."""


@dataclass(frozen=True)
class Loss:
    """One node's loss: the events to publish together, and the id that makes them once-only."""

    pool: str
    events: list[ev.Event]
    msg_id: str


@dataclass
class NodeWatch:
    timeout: float
    nodes: dict[str, Watched] = field(default_factory=dict)
    pods: dict[PodKey, tuple[str, str]] = field(default_factory=dict)
    """Pods that hold an agent node (bind requested, not ended): key -> (node, pool)."""
    refused: list[tuple[int, ev.BindRequested]] = field(default_factory=list)
    watermark: int = 0
    """The stream sequence of the last message folded (the service sets it)."""

    def apply(self, event: ev.Event, seq: int, clock: float) -> str | None:
        """Fold one event in, read at ``clock`` (a heartbeat counts from when it is read). A pod fact the
        watch's state refutes (``muster.fact_admission``) changes nothing: why is returned."""
        refused = refusal(self, event)
        if refused is not None:
            return refused
        match event:
            case ev.NodeRegistered(node=spec) | ev.NodeUpdated(node=spec):
                if is_agent_node(spec):
                    watched = self.nodes.get(spec.name)
                    losses = watched.losses if watched is not None else 0
                    self.nodes[spec.name] = Watched(pool=spec.pool, last_seen=clock, losses=losses)
                else:
                    self.nodes.pop(spec.name, None)
            case ev.NodeRemoved(name=name) if name in self.nodes:
                self.nodes[name].removed = True
            case ev.NodeLost(name=name) if name in self.nodes:
                self.nodes[name].lost = True
                self.nodes[name].losses += 1
            case ev.BindRequested(node=node) if node in self.nodes:
                watched = self.nodes[node]
                if watched.lost or watched.removed:
                    self.refused.append((seq, event))
                else:
                    self.pods[(event.job, event.pod)] = (node, event.pool)
            case ev.PodBound(node=node) if node in self.nodes:
                self.pods[(event.job, event.pod)] = (node, event.pool)
            case ev.PodEvicted() | ev.PodCompleted() | ev.PodFailed() | ev.BindFailed():
                key = (event.job, event.pod)  # type: ignore[union-attr]
                if key in self.pods and self.pods[key][0] == event.node:  # type: ignore[union-attr]
                    del self.pods[key]
            case _:
                pass
        return None

    # -- what the watch knows, as ``fact_admission`` asks it ------------------------------------

    def pods_of(self, job: str) -> int | None:
        return None  # the watch reads no pod groups

    def placed_on(self, job: str, pod: int, node: str) -> str | None:
        # Its map keeps the pod's newest bind, not the node it runs on while a move is under way:
        # it cannot say where the log has the pod.
        return None

    def devices_of(self, node: str) -> int | None:
        return UNCHECKED  # it watches agent nodes only, and counts no GPUs

    def losses_due(self, clock: float) -> list[Loss]:
        """Every agent node silent for longer than the timeout at ``clock``, by name."""
        out = []
        for name in sorted(self.nodes):
            watched = self.nodes[name]
            if watched.lost or watched.removed or clock - watched.last_seen <= self.timeout:
                continue
            events: list[ev.Event] = [
                ev.NodeLost(
                    name=name, pool=watched.pool, last_seen=watched.last_seen, at=clock, timeout=self.timeout
                )
            ]
            for key in sorted(k for k, (node, _) in self.pods.items() if node == name):
                events.append(ev.PodEvicted(job=key[0], pod=key[1], node=name, pool=self.pods[key][1]))
            events.append(ev.NodeRemoved(name=name, pool=watched.pool))
            out.append(
                Loss(pool=watched.pool, events=events, msg_id=f"nodewatch:lost:{name}:{watched.losses}")
            )
        return out

    def refusals(self) -> list[tuple[str, list[ev.Event], str]]:
        """BindFailed for binds that reached a lost or removed agent node: (pool, events, msg id)."""
        out = []
        for seq, bind in self.refused:
            state = "lost" if self.nodes[bind.node].lost else "removed"
            failed = ev.BindFailed(
                job=bind.job,
                pod=bind.pod,
                node=bind.node,
                reason=f"node {bind.node} is {state}",
                pool=bind.pool,
            )
            out.append((bind.pool, [failed], f"nodewatch:refused:{seq}:{bind.job}:{bind.pod}"))
        self.refused.clear()
        return out
