"""Where each event travels: one JetStream stream, one subject per flow.

Everything lives in a single stream so that one stream sequence orders the
whole log: the allocator's watermark and replay both rest on that. Pools
partition the node, decision and pod subjects so that an allocator reads
only its own pools' traffic.

Each subject carries only the event types of its flow (``EVENT_TYPES``).
NATS permissions decide who may publish on a subject; this table decides
what a publish there may say, so a login allowed to report pod facts cannot
also announce a leader or request a bind. Every reader checks it when it
decodes a message (``muster.bus.admission``).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

# Event types (their wire tags) each subject may carry, keyed by the subject under the prefix; `*`
# stands for one token (a pool, a tenant, a queue). A new flow only adds a pattern here.
EVENT_TYPES: dict[str, frozenset[str]] = {
    "workloads": frozenset({"WorkloadSubmitted"}),
    # A tenant's own subjects, one per queue it may use (`workloads.<tenant>.<queue>`).
    "workloads.*.*": frozenset({"WorkloadSubmitted", "CancelRequested"}),
    "podgroups": frozenset({"PodGroupCreated", "PodGroupDeleted", "WorkloadRejected", "CancelRefused"}),
    # The podgrouper's answers to one tenant (`answers.<tenant>`), which only that tenant reads.
    "answers.*": frozenset({"RequestAnswered"}),
    # The podgrouper's declarations of KAI Topologies, which it alone writes and folds.
    "topologies": frozenset({"TopologyDeclared"}),
    "queues.requests": frozenset({"UpsertQueue", "DeleteQueue"}),
    "queues.events": frozenset({"QueueUpserted", "QueueDeleted", "QueueRejected"}),
    "queues.status": frozenset({"QueueStatus"}),
    # A lost node's envelope evicts the pods it held (see muster.events, "Node loss"); pods already
    # running are handed to a pool's fleet here too ("Adoption").
    "nodes.*": frozenset(
        {"NodeRegistered", "NodeUpdated", "NodeRemoved", "NodeLost", "PodEvicted", "AdoptPods"}
    ),
    "decisions.*": frozenset(
        {
            "BindRequested",
            "EvictionRequested",
            "PendingReasons",
            "CycleCompleted",
            "LeaderElected",
            "AllocatorConfigured",
        }
    ),
    "pods.*": frozenset(
        {"PodBound", "BindFailed", "BindRejected", "PodEvicted", "PodCompleted", "PodFailed"}
    ),
    "deadletter": frozenset({"DeadLettered"}),
    # One machine agent's own facts (`nodes.<pool>.<node>`, `pods.<pool>.<node>`): a login may be
    # allowed these subjects for its node only, and every event on one must name that node and pool
    # (`muster.bus.admission`). Node loss and adoption stay on the pool's subject: no agent says them.
    "nodes.*.*": frozenset({"NodeRegistered", "NodeUpdated", "NodeRemoved"}),
    "pods.*.*": frozenset({"PodBound", "BindFailed", "PodEvicted", "PodCompleted", "PodFailed"}),
}


def subject_matches(pattern: str, subject: str) -> bool:
    """NATS subject matching: ``*`` is one token, a trailing ``>`` is one or more."""
    p, s = pattern.split("."), subject.split(".")
    for i, token in enumerate(p):
        if token == ">":
            return len(s) > i
        if i >= len(s) or (token != "*" and token != s[i]):
            return False
    return len(p) == len(s)


@lru_cache(maxsize=4096)
def _allowed(prefix: str, subject: str) -> frozenset[str]:
    # Readers ask once per message; the subjects of a system are few, so the answers are kept.
    for role, types in EVENT_TYPES.items():
        if subject_matches(f"{prefix}.{role}", subject):
            return types
    return frozenset()


def _token(name: str) -> str:
    """``name`` as one subject token: characters NATS reads as separators or wildcards replaced."""
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in name)


def node_token(node: str) -> str:
    """Node ``node`` as the last token of its subjects: its dots become ``_``.

    One-to-one over node names (``muster.names.NODE`` allows no ``_``), so a
    token names exactly one node.
    """
    return _token(node)


@lru_cache(maxsize=4096)
def _pool_and_node(prefix: str, subject: str) -> tuple[str, str] | None:
    for flow in ("nodes", "pods"):
        if subject_matches(f"{prefix}.{flow}.*.*", subject):
            pool, node = subject.split(".")[-2:]
            return pool, node
    return None


def _node_part(node: str) -> str:
    return node if node in ("*", ">") else node_token(node)


@dataclass(frozen=True)
class Subjects:
    """Subject and stream names under one prefix (one prefix per system)."""

    prefix: str = "muster"

    def allowed_types(self, subject: str) -> frozenset[str]:
        """The event types a message on ``subject`` may carry (none for a subject of no flow)."""
        return _allowed(self.prefix, subject)

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

    def tenant_workloads(self, tenant: str = "*", queue: str = "*") -> str:
        """WorkloadSubmitted, CancelRequested: from ``tenant``, for ``queue``."""
        return f"{self.prefix}.workloads.{tenant}.{queue}"

    def tenant_and_queue(self, subject: str) -> tuple[str, str] | None:
        """The (tenant, queue) a tenant subject names, or None for any other subject."""
        if not subject_matches(self.tenant_workloads(), subject):
            return None
        tenant, queue = subject.split(".")[-2:]
        return tenant, queue

    def answers(self, tenant: str = "*") -> str:
        """RequestAnswered: the podgrouper's answers to ``tenant``'s requests, for that tenant alone."""
        return f"{self.prefix}.answers.{tenant}"

    @property
    def podgroups(self) -> str:
        """PodGroupCreated, PodGroupDeleted, WorkloadRejected, CancelRefused."""
        return f"{self.prefix}.podgroups"

    @property
    def topologies(self) -> str:
        """TopologyDeclared."""
        return f"{self.prefix}.topologies"

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
        """NodeRegistered, NodeUpdated, NodeRemoved, AdoptPods; NodeLost with its PodEvicted and NodeRemoved."""
        return f"{self.prefix}.nodes.{pool}"

    def node_facts(self, pool: str = "*", node: str = "*") -> str:
        """NodeRegistered, NodeUpdated, NodeRemoved: from the agent of ``node`` (a name or ``*``)."""
        return f"{self.prefix}.nodes.{pool}.{_node_part(node)}"

    def node_subjects(self, pool: str = "*") -> list[str]:
        """Every subject ``pool``'s node events travel on: the pool's, and each agent node's."""
        return [self.nodes(pool), self.node_facts(pool)]

    def decisions(self, pool: str = "*") -> str:
        """BindRequested, EvictionRequested, PendingReasons, CycleCompleted, LeaderElected, AllocatorConfigured."""
        return f"{self.prefix}.decisions.{pool}"

    def pods(self, pool: str = "*") -> str:
        """PodBound, BindFailed, BindRejected, PodEvicted, PodCompleted, PodFailed."""
        return f"{self.prefix}.pods.{pool}"

    def node_pods(self, pool: str = "*", node: str = "*") -> str:
        """PodBound, BindFailed, PodEvicted, PodCompleted, PodFailed: from the agent of ``node``."""
        return f"{self.prefix}.pods.{pool}.{_node_part(node)}"

    def pod_subjects(self, pool: str = "*") -> list[str]:
        """Every subject ``pool``'s pod facts travel on: the pool's (binder, nodewatch), each agent node's."""
        return [self.pods(pool), self.node_pods(pool)]

    def pool_and_node(self, subject: str) -> tuple[str, str] | None:
        """The (pool, node token) an agent node's subject names, or None for any other subject."""
        return _pool_and_node(self.prefix, subject)

    def agent_logs(self, node: str) -> str:
        """Core NATS request/reply subject where ``muster agent`` serves its pods' logs.

        Outside the stream's subjects on purpose: log chunks are not facts.
        """
        return f"_{self.stream}_LOGS.{node_token(node)}"

    def alive(self, pool: str, instance: str) -> str:
        """Core NATS subject where an allocator instance of ``pool`` answers "are you there?"
        (``muster.liveness``). Outside the stream's subjects on purpose: presence is not a fact."""
        return f"_{self.stream}_ALIVE.{_token(pool)}.{_token(instance)}"

    @property
    def deadletter(self) -> str:
        """DeadLettered."""
        return f"{self.prefix}.deadletter"
