"""Facts the allocator's fold refuses although they decode: a node's word about a pod that contradicts
what the log already says of that pod (issue #25).

Bus admission (``muster.bus.admission``) refuses what is malformed or out of bounds in itself. What
passes it can still be impossible against the state: a ``PodBound`` naming a device past the node's
last GPU (folded, it would index past the node's devices and stop every later cycle), a node that is
not registered, or another node than the one the pod was bound to (one agent speaking for another's
pod). Such a fact is refused here, before it changes anything, and the refusal is the same wherever
the log is folded: the live allocator dead-letters it with this reason, replay and simulate refuse it
alike.

Only facts about a known pod are judged: a fact about an unknown job or pod index changes nothing
anyway (a late word about a job since deleted).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from muster import events as ev
from muster.kernels import placement as pl

if TYPE_CHECKING:
    from .nodes import NodeTable
    from .pods import Job

PodFact = ev.PodBound | ev.PodEvicted | ev.PodCompleted | ev.PodFailed | ev.BindFailed


def fact_refusal(jobs: dict[str, Job], nodes: NodeTable, event: PodFact) -> str | None:
    """Why ``event`` must not be folded, or None."""
    job = jobs.get(event.job)
    if job is None or not 0 <= event.pod < len(job.pods):
        return None
    i = event.pod
    where = f"pod {event.job}/{i}"
    held = job.node[i]
    if held >= 0:
        name = nodes.name_of(held)
        if name is not None and event.node != name:
            return f"{where} was placed on node {name}, not {event.node}"
    if not isinstance(event, ev.PodBound):
        return None
    node = nodes.nodes.get(event.node)
    if node is None:
        return f"{where}: node {event.node} is not registered"
    count = int(node.spec.resources.gpu)
    past = [g for g in event.gpus if not 0 <= g < count]
    if past:
        return f"{where}: device {past[0]} is past the last of node {event.node}'s {count} GPUs"
    if len(set(event.gpus)) != len(event.gpus):
        return f"{where}: devices {event.gpus} name one device twice"
    if held >= 0 and tuple(event.gpus) != job.gpus[i]:
        return f"{where} was given devices {list(job.gpus[i])} on node {event.node}, not {event.gpus}"
    req = job.pods[i]
    wanted = req.whole if req.kind == pl.WHOLE else 1 if req.kind in (pl.FRACTION, pl.MEMORY) else 0
    if held < 0 and len(event.gpus) != wanted:
        return f"{where} needs {wanted} device(s), not {len(event.gpus)}"
    return None
