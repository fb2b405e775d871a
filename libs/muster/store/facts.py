"""Where the projection has each pod, kept beside it so the projector checks a node's word against it.

The rule is ``muster.fact_admission``'s; this is the projector's fold, which answers its questions
from what the projector has already projected: the node each unfinished pod holds (``NOWHERE`` while it
waits to be placed, None where the projection cannot say), the move a releasing pod waits to make,
and each node's GPUs. A refused fact is still kept in ``events`` (the log's copy), but moves no row.

It is the projector's hot path: every question is one dictionary lookup, and so is each update. It
is rebuilt from Postgres when the projector starts (``load``), where the rows cannot tell a pod being
bound from one moving, nor a pending pod from one whose move is under way: such pods are "cannot say"
until the log next places them.
"""

from __future__ import annotations

from collections.abc import Iterable

from muster import events as ev
from muster.bus import Delivery
from muster.fact_admission import NOWHERE, refusal
from muster.fencing import EpochFence

PodKey = tuple[str, int]

_HOLDING = ("bound", "releasing")
"""Pod rows whose node is the one the pod holds for sure."""


class ProjectedFacts:
    """The projector's fold of placements, as ``fact_admission.FoldFacts``."""

    def __init__(self) -> None:
        self.pods: dict[str, int] = {}
        """Job -> how many pods it has, until it is deleted."""
        self.where: dict[PodKey, str | None] = {}
        """Unfinished pod -> the node it holds, ``NOWHERE``, or None (cannot say)."""
        self.moving: dict[PodKey, str] = {}
        """Pod -> the node it was bound to while it still held another (a move, or a deposed
        leader's bind): where it goes once its node lets go."""
        self.gpus: dict[str, int] = {}
        """Registered node -> its GPUs."""
        self.fence = EpochFence()
        self.seq = 0
        """The stream sequence of the last message folded."""

    @classmethod
    def load(
        cls,
        seq: int,
        pods: Iterable[tuple[str, int, int, str, str | None]],
        nodes: Iterable[tuple[str, int]],
        epochs: Iterable[tuple[str, int]],
    ) -> ProjectedFacts:
        """The fold as the projection's rows leave it at stream sequence ``seq``: ``pods`` as (job, pods
        of the job, index, status, node) of every unfinished pod of a job not deleted; ``nodes`` as
        (name, GPUs); ``epochs`` as (pool, the highest epoch its cycles were decided under)."""
        facts = cls()
        facts.seq = seq
        for job, count, pod, status, node in pods:
            facts.pods[job] = count
            facts.where[(job, pod)] = node if status in _HOLDING and node else None
        facts.gpus = dict(nodes)
        facts.fence.epochs = dict(epochs)
        return facts

    # -- as ``fact_admission`` asks it ------------------------------------------------------------

    def pods_of(self, job: str) -> int | None:
        return self.pods.get(job)

    def placed_on(self, job: str, pod: int, node: str) -> str | None:
        return self.where.get((job, pod))

    def devices_of(self, node: str) -> int | None:
        return self.gpus.get(node)

    # -- folding ----------------------------------------------------------------------------------

    def admit_all(
        self, deliveries: list[Delivery]
    ) -> tuple[dict[int, frozenset[int]], list[tuple[Delivery, str]]]:
        """Fold in the messages not folded yet, in stream order: the refused facts' indexes by stream
        sequence, and each message with a refused fact beside the first refusal's reason."""
        refused: dict[int, frozenset[int]] = {}
        letters = []
        for d in sorted(deliveries, key=lambda d: d.seq):
            indexes, why = self.admit(d.seq, d.events)
            if why is not None:
                refused[d.seq] = indexes
                letters.append((d, why))
        return refused, letters

    def admit(self, seq: int, events: list[ev.Event]) -> tuple[frozenset[int], str | None]:
        """Fold one message in: the indexes of the facts in it refused, and why the first was (a message
        folded already is not folded again, and refuses nothing)."""
        if seq <= self.seq:
            return frozenset(), None
        self.seq = seq
        refused: set[int] = set()
        why = None
        for idx, event in enumerate(events):
            reason = refusal(self, event)
            if reason is None:
                self._apply(event)
            else:
                refused.add(idx)
                why = why or reason
        return frozenset(refused), why

    def _apply(self, event: ev.Event) -> None:
        kind = type(event)
        if not self.fence.admit(event):
            return  # a deposed leader's decision, answered BindRejected: it placed nothing
        if kind is ev.PodGroupCreated:
            self._created(event)  # type: ignore[arg-type]
        elif kind is ev.BindRequested:
            key = (event.job, event.pod)  # type: ignore[attr-defined]
            if key in self.where:
                held = self.where[key]
                if held == NOWHERE:
                    self.where[key] = event.node  # type: ignore[attr-defined]
                elif held is not None and held != event.node:  # type: ignore[attr-defined]
                    self.moving[key] = event.node  # type: ignore[attr-defined]
        elif kind is ev.PodBound:
            key = (event.job, event.pod)  # type: ignore[attr-defined]
            if key in self.where:
                self.where[key] = event.node  # type: ignore[attr-defined]
                self.moving.pop(key, None)
        elif kind is ev.PodEvicted or kind is ev.BindFailed:
            self._unbind(event.job, event.pod, event.node)  # type: ignore[attr-defined]
        elif kind is ev.PodCompleted or kind is ev.PodFailed:
            key = (event.job, event.pod)  # type: ignore[attr-defined]
            self.where.pop(key, None)
            if self.moving:
                self.moving.pop(key, None)
        elif kind is ev.PodGroupDeleted:
            self._deleted(event.name)  # type: ignore[attr-defined]
        elif kind is ev.NodeRegistered or kind is ev.NodeUpdated:
            self.gpus[event.node.name] = int(event.node.resources.gpu)  # type: ignore[attr-defined]

    def _created(self, group: ev.PodGroupCreated) -> None:
        if group.name in self.pods:
            return  # a resubmission under a name the projection holds: its rows stay as they are
        count = sum(spec.count for spec in group.pods)
        self.pods[group.name] = count
        for pod in range(count):
            self.where[(group.name, pod)] = NOWHERE

    def _deleted(self, job: str) -> None:
        for pod in range(self.pods.pop(job, 0)):
            self.where.pop((job, pod), None)
            self.moving.pop((job, pod), None)

    def _unbind(self, job: str, pod: int, node: str) -> None:
        """``node`` let the pod go (or never took it): it goes where it was moving, or waits."""
        key = (job, pod)
        if self.moving.get(key) == node:
            del self.moving[key]  # the move's bind failed: the pod stays where it is
        elif key in self.where and self.where[key] == node:
            self.where[key] = self.moving.pop(key, NOWHERE)
