"""Every event muster's services exchange, as frozen, tagged msgspec Structs.

A message on the bus is an ``Envelope`` carrying a batch of events; each
event is addressed by (stream sequence, index in the envelope). Facts are
past tense (``PodBound``); requests are imperative (``UpsertQueue``).

Evolution rules: new fields get defaults; a field never changes type; a tag
is never reused. A breaking change adds a new tag (``PodBound.v2``) and an
upcast step on read in ``decode_envelope``.

Units everywhere: GPUs in devices (a float below 1 is a share of one
device), GPU memory and memory in bytes, CPU in millicores, extended
resources as integers, clocks in seconds.

Job (pod group) lifecycle::

    submitted ──WorkloadSubmitted──► grouped ──PodGroupCreated──► pending
    pending ──(all gang pods) BindRequested──► binding ──PodBound──► running
    binding ──BindFailed / BindRejected──► pending
    running ──EvictionRequested──► releasing ──PodEvicted──► pending (preempted)
    running ──PodCompleted (every pod)──► completed
    running ──PodCompleted / PodFailed (every pod ended, one or more failed)──► failed
    any ──PodGroupDeleted──► gone

Tenants (``muster tenant add``) submit on ``workloads.<tenant>.<queue>``; the
podgrouper answers as for any submission, with ``owner`` set on each group,
unless the workload names another queue or a group name another owner's live
job holds (``WorkloadRejected``). A tenant's ``CancelRequested`` is answered
``PodGroupDeleted`` when the job is the tenant's own, else ``CancelRefused``.
Each answer is repeated to the tenant alone as one ``RequestAnswered`` on
``answers.<tenant>``, the only subject besides its own requests it may read.

Pod lifecycle (a pod is ``(job, index)``, index over the job's pod specs
expanded in order)::

    pending ──BindRequested──► binding ──PodBound──► bound
    pending ──AdoptPods, then PodBound──► bound   (already running when handed over: no decision)
    binding ──BindFailed / BindRejected──► pending
    bound ──EvictionRequested──► releasing ──PodEvicted──► pending
    bound ──PodCompleted──► completed
    bound ──PodFailed──► failed          (terminal: it holds nothing any more)

Pods run by ``muster agent`` (nodes labelled ``muster.dev/backend: agent``):
the agent of the pod's node, not the binder, answers its BindRequested with
PodBound (process started), its end with PodCompleted (exit 0) or PodFailed
(exit code), and its EvictionRequested with PodEvicted (after SIGTERM and,
past the grace period, SIGKILL). A pod the agent finds gone without a known
end (it restarted without its processes) is reported PodEvicted, so its gang
returns to the queue.

What runs where: a group says what its pods are (``PodGroupCreated.runtime``:
command, image or simulated) and a node what it runs (``NodeSpec.runtimes``);
a pod is placed only on a node that runs its kind, and the simulated fleet
answers a bind that breaks this with BindFailed (``muster.runtimes``).

Adoption: pods that already run when a fleet is handed over (``muster apply``
of a scenario's ``running`` pods) are named in ``AdoptPods`` on
``nodes.<pool>``, before their workload is submitted. The fleet is the
authority on what runs on its nodes: once it has read a pod's group, it
answers with ``PodBound`` (``at`` = when the pod started) or ``BindFailed``
(why it cannot run there). No allocator decides on a pool while a pod of a
group it knows is named and unanswered, so nothing is placed twice.

Node loss: an agent node whose heartbeats (NodeUpdated) stop for longer than
the node monitor's timeout is declared lost in one envelope on
``nodes.<pool>``: ``NodeLost``, then ``PodEvicted`` for each pod still on it
(they are pending again), then ``NodeRemoved``. An agent that comes back
registers the node again and stops whatever the log says is gone.

Topologies (KAI's cluster-scoped ``Topology``, kai-semantics.md §18): a submission that carries one
makes the podgrouper declare it on ``topologies`` (``TopologyDeclared``) unless it holds it unchanged
already; from then on later submissions may name it. A re-declaration keeps the node labels (only
aliases change); one that changes them is refused with the rest of its submission (WorkloadRejected).

Queue lifecycle: ``UpsertQueue`` is a request; the queue-controller answers
``QueueUpserted`` or ``QueueRejected`` (naming the field). ``DeleteQueue``
answers ``QueueDeleted`` or ``QueueRejected``.
"""

from __future__ import annotations

from typing import Any, Union

import msgspec

# -- value types -------------------------------------------------------------


class Resources(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True, omit_defaults=True):
    """What one pod asks for, or one node offers, in base units."""

    gpu: float = 0.0
    """Devices. Below 1: a share of one device (GPU sharing)."""
    gpu_memory: int = 0
    """Bytes of one shared device (a pod) or per device (a node)."""
    cpu: int = 0
    """Millicores."""
    memory: int = 0
    """Bytes."""
    extended: dict[str, int] = {}
    """Extended resources such as ``rdma/ib``, as whole counts."""


# Kubernetes' own spelling (core/v1), so a manifest's constraints read the same in an event. Tuples, not
# lists: the allocator keys a pod's eligible nodes by them, so they must hash.


class Toleration(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True, rename="camel"):
    """core/v1 Toleration: which taints a pod accepts (``muster.placement_predicates``)."""

    key: str = ""
    """Empty with operator Exists: every taint."""
    operator: str = "Equal"
    """Equal | Exists."""
    value: str = ""
    effect: str = ""
    """NoSchedule | PreferNoSchedule | NoExecute; empty: every effect."""
    toleration_seconds: int | None = None
    """How long a NoExecute taint is tolerated once added; placement does not read it."""


class Taint(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """core/v1 Taint: a node repels pods that do not tolerate it (NoSchedule, NoExecute)."""

    key: str
    value: str = ""
    effect: str
    """NoSchedule | PreferNoSchedule | NoExecute."""


class NodeSelectorRequirement(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """core/v1 NodeSelectorRequirement: one condition on a node label (or a node field)."""

    key: str
    operator: str
    """In | NotIn | Exists | DoesNotExist | Gt | Lt."""
    values: tuple[str, ...] = ()


class NodeSelectorTerm(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True, rename="camel"):
    """core/v1 NodeSelectorTerm: every requirement holds (an empty term matches no node)."""

    match_expressions: tuple[NodeSelectorRequirement, ...] = ()
    """On node labels."""
    match_fields: tuple[NodeSelectorRequirement, ...] = ()
    """On node fields: ``metadata.name`` only."""


class LabelSelectorRequirement(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """meta/v1 LabelSelectorRequirement: one condition on a pod label."""

    key: str
    operator: str
    """In | NotIn | Exists | DoesNotExist."""
    values: tuple[str, ...] = ()


class LabelSelector(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True, rename="camel"):
    """meta/v1 LabelSelector: every requirement holds (none: every pod). A manifest's ``matchLabels`` is
    read into ``In`` requirements of one value, which Kubernetes takes them for."""

    match_expressions: tuple[LabelSelectorRequirement, ...] = ()


class PodAffinityTerm(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True, rename="camel"):
    """core/v1 PodAffinityTerm (a required one): the pods ``label_selector`` selects, counted per value of
    the node label ``topology_key`` (``muster.pod_affinity``)."""

    label_selector: LabelSelector | None = None
    """None: the term selects no pod (as Kubernetes reads a missing selector)."""
    topology_key: str


class WeightedPodAffinityTerm(
    msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True, rename="camel"
):
    """core/v1 WeightedPodAffinityTerm: a preferred term, scored by its weight (1-100)."""

    weight: int
    pod_affinity_term: PodAffinityTerm


class SecretEnv(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """An environment variable whose value is a secret (``muster.secrets_store``): the log holds only
    the secret's name, and the agent that starts the pod reads its value, from its owner's secrets."""

    name: str
    """The variable."""
    secret: str
    """The secret's name (``NAME`` or ``NAME/KEY``), among the secrets of the group's owner."""


class PodSpec(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True, omit_defaults=True):
    """``count`` identical pods of one role in a gang."""

    role: str = "worker"
    count: int = 1
    resources: Resources = Resources()
    node_selector: dict[str, str] = {}
    gpu_models: list[str] = []
    subgroup: str = ""
    """Name of the sub-group these pods belong to ('' = none)."""
    command: list[str] = []
    """What ``muster agent`` runs for each pod (argv; empty: nothing to run)."""
    env: dict[str, str] = {}
    """Environment of the command: on top of a clean one (PATH, HOME, USER, LOGNAME),
    never the agent's; muster's own variables (RANK, CUDA_VISIBLE_DEVICES...) win."""
    secret_env: list[SecretEnv] = []
    """Variables set from secrets when the pod starts: references, never values. A pod whose secret is
    missing fails without starting. ``env`` holds none of their names."""
    workdir: str | None = None
    """Working directory of the command (None: the agent's)."""
    grace_period: float | None = None
    """Seconds between SIGTERM and SIGKILL on eviction (None: the agent's default)."""
    tolerations: list[Toleration] = []
    """Taints these pods accept; a node's NoSchedule and NoExecute taints must each be tolerated."""
    node_affinity: list[NodeSelectorTerm] = []
    """Required node affinity (``requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms``):
    a node must match one term. Empty: no requirement."""
    labels: dict[str, str] = {}
    """The pods' own labels (the pod template's ``metadata.labels``): what other pods' pod affinity and
    anti-affinity select."""
    pod_affinity: list[PodAffinityTerm] = []
    """Required pod affinity: a node qualifies only if its domain of each term's topology key holds a pod
    the term selects. Empty: no requirement."""
    pod_anti_affinity: list[PodAffinityTerm] = []
    """Required pod anti-affinity: a node qualifies only if no domain of a term's topology key it is in
    holds a pod the term selects; it keeps other pods it selects out of its own domain too."""
    preferred_pod_affinity: list[WeightedPodAffinityTerm] = []
    preferred_pod_anti_affinity: list[WeightedPodAffinityTerm] = []
    """Preferred pod affinity and anti-affinity: scored, a node whose domains hold pods they select
    ranking above (affinity) or below (anti-affinity) the others, before any other score."""


class Topology(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    required: str | None = None
    """All pods under one value of this node label."""
    preferred: str | None = None
    """As few values of this node label as fit."""
    name: str | None = None
    """The KAI Topology resource the constraint names (kai-semantics.md §18); None: ``required`` and
    ``preferred`` are node labels on their own, one level each (every group from before Topologies)."""
    levels: tuple[str, ...] = ()
    """That topology's level labels, widest first, as it was when the group was read: a domain at a
    level is one value of each label down to it, and a preferred level is relaxed up to the required."""


class TopologyLevel(
    msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True, omit_defaults=True
):
    """One level of a declared Topology: a node label and, optionally, the alias constraints may use."""

    label: str
    alias: str = ""


class SubGroup(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True, omit_defaults=True):
    """A node of a job's sub-group tree (kai-semantics.md §14): a leaf holds pods and needs
    ``min_available`` of them active; a parent (named by another's ``parent``) needs ``min_subgroup``
    of its direct children satisfied (None: all of them)."""

    name: str
    min_available: int = 0
    parent: str | None = None
    """The sub-group this one belongs to; None: the job itself (a log without trees: every sub-group)."""
    min_subgroup: int | None = None
    topology: Topology | None = None
    """Its own constraint (kai-semantics.md §14.5): the pods of its subtree in one domain, inside the domain
    its parent's constraint chose; None: its parent's node set passes through. Omitted when None, so a log
    without nested constraints reads as before."""


class MinRuntime(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Seconds a running job is protected from preempt / reclaim."""

    preempt: float | None = None
    reclaim: float | None = None


class QueueResource(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Quota semantics for one resource; -1 means unlimited / none."""

    quota: float = -1.0
    over_quota_weight: float = 1.0
    limit: float = -1.0


class QueueSpec(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    name: str
    parent: str | None = None
    priority: int = 100
    resources: dict[str, QueueResource] = {}
    """Keyed by resource (gpu, cpu, memory, or an extended name); missing
    gpu means quota 0, weight 1, limit -1; anything else missing means no
    constraint."""
    min_runtime: MinRuntime | None = None
    order: int = 0
    """Creation order; breaks ties where KAI uses creation time."""


class AdoptedPod(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One pod already running on a node, as it is handed to the fleet."""

    job: str
    pod: int
    node: str
    gpus: list[int] = []
    """Device indices on the node."""
    started_at: float = 0.0
    """Clock at which it started: before the fleet heard of it, as a rule."""


class NodeSpec(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    name: str
    pool: str = "default"
    labels: dict[str, str] = {}
    resources: Resources = Resources()
    """``gpu`` is the whole device count; ``gpu_memory`` is per device."""
    gpu_model: str | None = None
    unschedulable: bool = False
    runtimes: list[str] = []
    """What kinds of pod the node runs: ``command``, ``image``, ``simulated`` (see ``muster.runtimes``).
    Empty, as on every node registered before nodes said so: what its backend runs, commands on a
    ``muster agent`` node and simulated pods on any other. An old job may use any node whatever this
    says, so an old log replays to the same decisions."""
    taints: list[Taint] = []
    """Pods that do not tolerate one of its NoSchedule or NoExecute taints are not placed here."""


# -- events ------------------------------------------------------------------


class _Event(msgspec.Struct, frozen=True, kw_only=True, tag_field="type", forbid_unknown_fields=True):
    pass


class WorkloadSubmitted(_Event, tag="WorkloadSubmitted", kw_only=True):
    """A framework or the CLI hands muster a workload, unchanged."""

    uid: str
    """Stable id of this submission; makes redelivery harmless."""
    manifests: list[dict[str, Any]]
    """Kubernetes-style documents that belong together (a RayCluster and its pods)."""
    submitted_at: float = 0.0
    queue: str | None = None
    """Overrides the queue the manifest names."""


class WorkloadRejected(_Event, tag="WorkloadRejected", kw_only=True):
    uid: str
    error: str
    field: str = ""


class PodGroupCreated(_Event, tag="PodGroupCreated", kw_only=True, omit_defaults=True):
    """A gang the allocator can schedule: pods that run together or not at all."""

    name: str
    queue: str
    kind: str = "Job"
    pool: str = "default"
    priority_class: str | None = None
    priority: int = 50
    preemptible: bool = True
    min_available: int = 1
    submitted_at: float = 0.0
    pods: list[PodSpec] = []
    subgroups: list[SubGroup] = []
    min_subgroup: int | None = None
    """How many top-level sub-groups must be satisfied (KAI's minSubGroup on the PodGroup); None: all."""
    topology: Topology | None = None
    min_runtime: float | None = None
    duration: float | None = None
    """Seconds of run time after which the pods complete (simulated fleets)."""
    workload_uid: str = ""
    owner: str = ""
    """The tenant that submitted it; '' for the system's own logins (cli, framework)."""
    runtime: str = ""
    """What its pods are, and so which nodes may run them: ``command``, ``image`` or ``simulated`` (see
    ``muster.runtimes``). '' (every group from before groups said so): any node, as when it was
    decided, so an old log replays to the same decisions."""
    preemption_delay: float | None = None
    """Seconds after its creation or its last eviction during which the pending group may not make
    reclaim, preempt or consolidate evict anyone (KAI's ``preemptionDelay``); None or 0: no delay."""
    stale_gang_grace: float | None = None
    """Seconds the group may run below its minimum before its pods are evicted (KAI's
    ``stalenessGracePeriod``); negative: never; None: the allocator's configured grace."""


class PodGroupDeleted(_Event, tag="PodGroupDeleted", kw_only=True):
    name: str


class CancelRequested(_Event, tag="CancelRequested", kw_only=True):
    """A tenant asks to delete one of its jobs; the tenant is the subject's, never the body's."""

    uid: str
    """Id of this request; the refusal, if any, names it."""
    job: str


class CancelRefused(_Event, tag="CancelRefused", kw_only=True):
    """The podgrouper's answer to a CancelRequested for a job that is not the tenant's (or none)."""

    uid: str
    job: str
    error: str


class RequestAnswered(_Event, tag="RequestAnswered", kw_only=True):
    """The podgrouper's answer to one tenant request, on that tenant's own ``answers.<tenant>``.

    The tenant reads only its own subjects, so what it waits for is repeated here, after the
    decision on ``podgroups``. It carries nothing the tenant did not send or may not know: the
    jobs its request created or deleted, or why it was refused.
    """

    request: str
    """The request's type: ``WorkloadSubmitted`` or ``CancelRequested``."""
    uid: str
    """The request's uid."""
    jobs: list[str] = []
    """The jobs the request created (a submission) or deleted (a cancel); none when refused."""
    error: str = ""
    """Why the request was refused; '' when it was done."""
    field: str = ""
    """The field a refused submission was refused for."""


class TopologyDeclared(_Event, tag="TopologyDeclared", kw_only=True):
    """The podgrouper holds KAI Topology ``name`` with these levels (widest first) from now on, in place
    of any earlier declaration of the name (whose labels these keep: only aliases change)."""

    name: str
    levels: list[TopologyLevel]
    workload_uid: str = ""
    """The submission that carried it."""


class UpsertQueue(_Event, tag="UpsertQueue", kw_only=True):
    queue: QueueSpec


class DeleteQueue(_Event, tag="DeleteQueue", kw_only=True):
    name: str


class QueueUpserted(_Event, tag="QueueUpserted", kw_only=True):
    queue: QueueSpec


class QueueDeleted(_Event, tag="QueueDeleted", kw_only=True):
    name: str


class QueueRejected(_Event, tag="QueueRejected", kw_only=True):
    name: str
    error: str
    field: str = ""


class QueueStatus(_Event, tag="QueueStatus", kw_only=True):
    name: str
    fair_share: dict[str, float] = {}
    allocated: dict[str, float] = {}
    requested: dict[str, float] = {}


class NodeRegistered(_Event, tag="NodeRegistered", kw_only=True):
    node: NodeSpec


class NodeUpdated(_Event, tag="NodeUpdated", kw_only=True):
    """The node's whole new spec (labels, capacity, schedulability)."""

    node: NodeSpec


class NodeRemoved(_Event, tag="NodeRemoved", kw_only=True):
    name: str
    pool: str = "default"


class AdoptPods(_Event, tag="AdoptPods", kw_only=True):
    """Pods already running on the fleet's nodes of ``pool``: the fleet is to report them.

    A request, not a fact: a pod runs once the fleet answers ``PodBound``.
    Each pod belongs to the group of its ``job`` made from submission
    ``workload_uid`` ('' = a group that names no submission).
    """

    pool: str = "default"
    workload_uid: str = ""
    pods: list[AdoptedPod] = []


class BindRequested(_Event, tag="BindRequested", kw_only=True):
    """The allocator placed one pod; the binder makes it so."""

    job: str
    pod: int
    node: str
    gpus: list[int] = []
    """Device indices on the node."""
    gpu_share: float = 0.0
    """For a shared-device pod, the fraction of ``gpus[0]`` it holds; 0 = whole devices."""
    pool: str = "default"
    cycle: int = 0
    epoch: int = 0
    pipelined: bool = False
    """Placed on resources that pending evictions free: bind after they complete."""


class EvictionRequested(_Event, tag="EvictionRequested", kw_only=True):
    job: str
    pod: int
    node: str
    pool: str = "default"
    cycle: int = 0
    epoch: int = 0
    action: str = ""
    """allocate | consolidate | reclaim | preempt | stale_gang_eviction"""
    for_job: str | None = None
    reason: str = ""


class CycleCompleted(_Event, tag="CycleCompleted", kw_only=True):
    pool: str = "default"
    cycle: int
    epoch: int = 0
    watermark: int
    """Last stream sequence the cycle read."""
    clock: float
    binds: int = 0
    evictions: int = 0
    pending: dict[str, str] = {}
    """Pending reasons that changed since the previous cycle ('' = no longer pending): all of them, or,
    when they are too many for one message, those its ``PendingReasons`` parts do not carry."""
    config_digest: str = ""


class PendingReasons(_Event, tag="PendingReasons", kw_only=True):
    """Part of a cycle's changed pending reasons, published just before its ``CycleCompleted``.

    A cycle whose changed reasons would not fit in one message (tens of thousands of jobs changing
    reason at once) records them in parts, each job in exactly one: these, then the rest in the
    ``CycleCompleted``'s ``pending``. Readers take a part as they take ``pending``.
    """

    pool: str = "default"
    cycle: int
    epoch: int = 0
    clock: float
    """The cycle's clock, as its CycleCompleted records it."""
    reasons: dict[str, str] = {}
    """Job -> its new pending reason ('' = no longer pending)."""


class AllocatorConfigured(_Event, tag="AllocatorConfigured", kw_only=True):
    """An allocator began serving a pool with this configuration; replay reads it back."""

    pool: str = "default"
    epoch: int = 0
    config: dict[str, Any] = {}
    """The allocator's settings (AllocatorConfig fields)."""
    digest: str = ""
    """What every CycleCompleted of this configuration carries as config_digest."""


class PodBound(_Event, tag="PodBound", kw_only=True):
    job: str
    pod: int
    node: str
    gpus: list[int] = []
    gpu_share: float = 0.0
    pool: str = "default"
    at: float = 0.0
    """Clock at which the pod started."""


class BindFailed(_Event, tag="BindFailed", kw_only=True):
    job: str
    pod: int
    node: str
    reason: str
    pool: str = "default"


class BindRejected(_Event, tag="BindRejected", kw_only=True):
    """The binder refused a decision from a deposed leader (its epoch is older than the pool's)."""

    job: str
    pod: int
    node: str
    pool: str = "default"
    epoch: int = 0
    """The stale epoch the decision carried."""
    current_epoch: int = 0


class LeaderElected(_Event, tag="LeaderElected", kw_only=True):
    """An allocator took the lease of a pool; decisions of older epochs are void from here on."""

    pool: str = "default"
    epoch: int
    holder: str
    previous: str | None = None


class PodEvicted(_Event, tag="PodEvicted", kw_only=True):
    job: str
    pod: int
    node: str
    pool: str = "default"


class PodCompleted(_Event, tag="PodCompleted", kw_only=True):
    job: str
    pod: int
    node: str
    pool: str = "default"
    at: float = 0.0


class PodFailed(_Event, tag="PodFailed", kw_only=True):
    """A pod's process ended unsuccessfully (non-zero exit, killed, could not start).

    Terminal for the pod, like ``PodCompleted``: it holds nothing any more.
    """

    job: str
    pod: int
    node: str
    pool: str = "default"
    exit_code: int | None = None
    """The process's exit status; a negative value -N means killed by signal N; None: no process."""
    reason: str = ""
    at: float = 0.0


class NodeLost(_Event, tag="NodeLost", kw_only=True):
    """An agent node stopped sending heartbeats for longer than the node monitor's timeout.

    Followed, in the same envelope, by ``PodEvicted`` for each pod still on
    the node and by ``NodeRemoved``.
    """

    name: str
    pool: str = "default"
    last_seen: float = 0.0
    """Clock of the last heartbeat the monitor saw."""
    at: float = 0.0
    timeout: float = 0.0


class DeadLettered(_Event, tag="DeadLettered", kw_only=True):
    """A message a service could not decode or validate, kept with its error."""

    service: str
    subject: str
    stream_seq: int = 0
    error: str
    data: bytes = b""


Event = Union[  # noqa: UP007 (a runtime union object whose __args__ lists the types)
    WorkloadSubmitted,
    WorkloadRejected,
    PodGroupCreated,
    PodGroupDeleted,
    UpsertQueue,
    DeleteQueue,
    QueueUpserted,
    QueueDeleted,
    QueueRejected,
    QueueStatus,
    NodeRegistered,
    NodeUpdated,
    NodeRemoved,
    BindRequested,
    EvictionRequested,
    CycleCompleted,
    PendingReasons,
    AllocatorConfigured,
    LeaderElected,
    PodBound,
    BindFailed,
    BindRejected,
    PodEvicted,
    PodCompleted,
    DeadLettered,
    PodFailed,
    NodeLost,
    AdoptPods,
    CancelRequested,
    CancelRefused,
    RequestAnswered,
    TopologyDeclared,
]

EVENT_TYPES: tuple[type[_Event], ...] = Event.__args__  # type: ignore[attr-defined]


class Envelope(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One bus message: a batch of events produced together."""

    events: list[Event]


class _RawEnvelope(msgspec.Struct, frozen=True):
    events: list[msgspec.Raw]


_encoder = msgspec.json.Encoder()
_raw_envelope_decoder = msgspec.json.Decoder(_RawEnvelope)
_envelope_decoder = msgspec.json.Decoder(Envelope)
_event_decoder = msgspec.json.Decoder(Event)


def encode_envelope(events: list[Event] | tuple[Event, ...]) -> bytes:
    """The bytes of one bus message carrying ``events``."""
    return _encoder.encode(Envelope(events=list(events)))


def decode_envelope(data: bytes) -> list[Event]:
    """Decode and validate one bus message; raises ``msgspec.ValidationError``
    or ``msgspec.DecodeError`` naming the bad field."""
    return _envelope_decoder.decode(data).events


def envelope_parts(data: bytes) -> list[bytes]:
    """Each event of a (valid) bus message as the JSON it travelled as, in order."""
    return [bytes(raw) for raw in _raw_envelope_decoder.decode(data).events]


def encode_event(event: Event) -> bytes:
    return _encoder.encode(event)


def decode_event(data: bytes) -> Event:
    return _event_decoder.decode(data)


def event_type(event: Event) -> str:
    """The event's tag, its type name on the wire."""
    return type(event).__struct_config__.tag  # type: ignore[return-value]
