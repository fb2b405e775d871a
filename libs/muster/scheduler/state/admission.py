"""Facts the allocator's fold refuses although they decode: a node's word about a pod that contradicts
what the log already says of that pod (issue #25).

The rule every fold shares (a pod its job lacks, another node than the pod's, a node not registered,
a device past the node's last GPU or named twice) lives in ``muster.fact_admission``; this module
answers its questions from the allocator's state, and adds what only the allocator knows: the devices
it gave the pod, and how many the pod needs. A refused fact changes nothing; the live allocator
dead-letters it with the reason, replay and simulate refuse it alike.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from muster import events as ev
from muster import fact_admission
from muster.kernels import placement as pl

from .pods import PENDING

if TYPE_CHECKING:
    from .nodes import NodeTable
    from .pods import Job

PodFact = fact_admission.PodFact


class _AllocatorFacts:
    """The allocator's state as ``fact_admission.FoldFacts``."""

    __slots__ = ("jobs", "nodes")

    def __init__(self, jobs: dict[str, Job], nodes: NodeTable) -> None:
        self.jobs, self.nodes = jobs, nodes

    def pods_of(self, job: str) -> int | None:
        found = self.jobs.get(job)
        return None if found is None else len(found.pods)

    def placed_on(self, job: str, pod: int, node: str) -> str | None:
        found = self.jobs.get(job)
        if found is None:
            return None
        held = found.node[pod]
        if held >= 0:
            return self.nodes.name_of(held)
        return fact_admission.NOWHERE if found.state[pod] == PENDING else None

    def devices_of(self, node: str) -> int | None:
        found = self.nodes.nodes.get(node)
        return None if found is None else int(found.spec.resources.gpu)


def fact_refusal(jobs: dict[str, Job], nodes: NodeTable, event: PodFact) -> str | None:
    """Why ``event`` must not be folded, or None."""
    refused = fact_admission.refusal(_AllocatorFacts(jobs, nodes), event)
    if refused is not None or not isinstance(event, ev.PodBound):
        return refused
    job = jobs.get(event.job)
    if job is None:
        return None
    i = event.pod
    where = f"pod {event.job}/{i}"
    if job.node[i] >= 0 and tuple(event.gpus) != job.gpus[i]:
        return f"{where} was given devices {list(job.gpus[i])} on node {event.node}, not {event.gpus}"
    req = job.pods[i]
    wanted = req.whole if req.kind == pl.WHOLE else 1 if req.kind in (pl.FRACTION, pl.MEMORY) else 0
    if job.node[i] < 0 and len(event.gpus) != wanted:
        return f"{where} needs {wanted} device(s), not {len(event.gpus)}"
    return None
