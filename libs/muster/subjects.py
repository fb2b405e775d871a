"""Where each event travels: one JetStream stream, one subject per flow.

Everything lives in a single stream so that one stream sequence orders the
whole log: the allocator's watermark and replay both rest on that. Pools
partition the node, decision and pod subjects so that an allocator reads
only its own pools' traffic.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Subjects:
    """Subject and stream names under one prefix (one prefix per system)."""

    prefix: str = "muster"

    @property
    def stream(self) -> str:
        return self.prefix.upper().replace(".", "_").replace("-", "_")

    @property
    def all(self) -> str:
        return f"{self.prefix}.>"

    @property
    def workloads(self) -> str:
        """WorkloadSubmitted."""
        return f"{self.prefix}.workloads"

    @property
    def podgroups(self) -> str:
        """PodGroupCreated, PodGroupDeleted, WorkloadRejected."""
        return f"{self.prefix}.podgroups"

    @property
    def queue_requests(self) -> str:
        """UpsertQueue, DeleteQueue."""
        return f"{self.prefix}.queues.requests"

    @property
    def queues(self) -> str:
        """QueueUpserted, QueueDeleted, QueueRejected."""
        return f"{self.prefix}.queues.events"

    @property
    def queue_status(self) -> str:
        """QueueStatus."""
        return f"{self.prefix}.queues.status"

    def nodes(self, pool: str = "*") -> str:
        """NodeRegistered, NodeUpdated, NodeRemoved; NodeLost with its PodEvicted and NodeRemoved."""
        return f"{self.prefix}.nodes.{pool}"

    def decisions(self, pool: str = "*") -> str:
        """BindRequested, EvictionRequested, CycleCompleted."""
        return f"{self.prefix}.decisions.{pool}"

    def pods(self, pool: str = "*") -> str:
        """PodBound, BindFailed, PodEvicted, PodCompleted, PodFailed."""
        return f"{self.prefix}.pods.{pool}"

    def agent_logs(self, node: str) -> str:
        """Core NATS request/reply subject where ``muster agent`` serves its pods' logs.

        Outside the stream's subjects on purpose: log chunks are not facts.
        """
        token = "".join(c if c.isalnum() or c in "-_" else "_" for c in node)
        return f"_{self.stream}_LOGS.{token}"

    @property
    def deadletter(self) -> str:
        """DeadLettered."""
        return f"{self.prefix}.deadletter"
