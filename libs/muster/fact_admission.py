"""A node's word about a pod, checked against what a fold already knows: the one home of that rule.

Bus admission (``muster.bus.admission``) refuses what is malformed or out of bounds in itself. What
passes it can still be impossible against the state a fold holds: a ``PodBound`` naming a device past
the node's last GPU (folded, it would index past the node's devices), a node never registered, a pod
its job does not have, or a node other than the one the pod is placed on (one agent speaking for
another's pod), or a pod ending that waits to be placed (a ``PodCompleted`` that would mark it done
before it ever ran). Every fold that takes pod facts asks ``refusal`` before it applies one; a refused fact
changes nothing, and the live service dead-letters it with the reason (once: not again while it reads
its history after a restart). The answer depends on the fold's state and the event alone, and a
fold's state on the log alone, so live and replay refuse the same messages.

Each fold answers the three questions of ``FoldFacts`` from its own state, and says "I do not know"
(``None`` for a job or a placement, ``UNCHECKED`` for a node's devices) where its state cannot tell
for sure: a fact is refused only for what the fold knows contradicts it. Facts about a job the fold
does not know are let through: a late word about a job since deleted changes nothing.

Each question is one dictionary lookup: the rule runs on every pod fact of the hot path.
"""

from __future__ import annotations

from typing import Protocol

from muster import events as ev

PodFact = ev.PodBound | ev.PodEvicted | ev.PodCompleted | ev.PodFailed | ev.BindFailed

FACT_TYPES = frozenset({ev.PodBound, ev.PodEvicted, ev.PodCompleted, ev.PodFailed, ev.BindFailed})
"""The events that are a node's word about one of its pods."""

UNCHECKED = -1
"""What ``FoldFacts.devices_of`` answers for a node the fold cannot refute (it counts no GPUs there)."""

NOWHERE = ""
"""What ``FoldFacts.placed_on`` answers for a pod the fold knows waits to be placed (on no node, not
finished), or, from a fold that knows some nodes only, for a pod it knows is not on the fact's node."""

FINISHING = frozenset({ev.PodCompleted, ev.PodFailed})
"""Facts that end a pod for good: only a pod running somewhere can end so."""


class FoldFacts(Protocol):
    """What a fold knows of jobs, placements and nodes, as the rule asks it."""

    def pods_of(self, job: str) -> int | None:
        """How many pods ``job`` has; None if the fold does not know the job."""
        ...

    def placed_on(self, job: str, pod: int, node: str) -> str | None:
        """The node the pod holds (being bound, bound or releasing there); ``NOWHERE`` if the fold knows it
        waits to be placed (a fold that knows some nodes only may answer so of ``node``, the fact's, when
        it knows the pod is not there); None if the fold cannot say."""
        ...

    def devices_of(self, node: str) -> int | None:
        """How many GPUs registered ``node`` has; None if it is not registered; ``UNCHECKED`` if the fold
        does not know."""
        ...


def refusal(facts: FoldFacts, event: ev.Event) -> str | None:
    """Why ``event`` must not be folded into the fold ``facts`` describes, or None (any event that is not
    a pod fact is None)."""
    kind = type(event)
    if kind not in FACT_TYPES:
        return None
    fact: PodFact = event  # type: ignore[assignment]
    # Words are made only for a refusal: this runs on every pod fact of the hot path.
    count = facts.pods_of(fact.job)
    if count is not None and not 0 <= fact.pod < count:
        return f"{_pod(fact)}: job {fact.job} has {count} pod(s)"
    held = facts.placed_on(fact.job, fact.pod, fact.node)
    if held == NOWHERE:
        if kind in FINISHING:
            return f"{_pod(fact)} is not running on node {fact.node}"
    elif held is not None and held != fact.node:
        return f"{_pod(fact)} was placed on node {held}, not {fact.node}"
    if kind is not ev.PodBound:
        return None
    return device_refusal(facts.devices_of(fact.node), fact)  # type: ignore[arg-type]


def device_refusal(devices: int | None, bound: ev.PodBound) -> str | None:
    """Why ``bound`` cannot hold the devices it names on a node of ``devices`` GPUs (None: the node is
    not registered; ``UNCHECKED``: not known), or None."""
    if devices is None:
        return f"{_pod(bound)}: node {bound.node} is not registered"
    gpus = bound.gpus
    if devices != UNCHECKED:
        for g in gpus:
            if not 0 <= g < devices:
                return f"{_pod(bound)}: device {g} is past the last of node {bound.node}'s {devices} GPUs"
    if len(gpus) > 1 and len(set(gpus)) != len(gpus):
        return f"{_pod(bound)}: devices {gpus} name one device twice"
    return None


def _pod(fact: PodFact) -> str:
    return f"pod {fact.job}/{fact.pod}"
