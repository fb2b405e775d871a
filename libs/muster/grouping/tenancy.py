"""A tenant's requests, decided: its own queue, its own job names, its own jobs to cancel.

Pure: the tenant and queue come from the subject (which only that tenant's
login may publish on), the owners from a fold of ``podgroups``. A job name
is held by its owner from PodGroupCreated until PodGroupDeleted; the
system's own logins own their jobs as ``""``.
"""

from __future__ import annotations

from collections.abc import Mapping

import msgspec

from muster.events import (
    CancelRefused,
    CancelRequested,
    Event,
    PodGroupCreated,
    PodGroupDeleted,
    RequestAnswered,
    WorkloadRejected,
    WorkloadSubmitted,
    event_type,
)
from muster.grouping.submission import group_submission
from muster.queues.default import DEFAULT_QUEUE
from muster.topologies import TopologyDef


class Owners:
    """Who holds each live job name: a fold of the ``podgroups`` flow."""

    def __init__(self) -> None:
        self._by_name: dict[str, str] = {}

    def apply(self, event: Event) -> None:
        # Last writer wins per name, so applying a stretch of the log again changes nothing.
        match event:
            case PodGroupCreated(name=name, owner=owner):
                self._by_name[name] = owner
            case PodGroupDeleted(name=name):
                self._by_name.pop(name, None)

    def of(self, name: str) -> str | None:
        """The owner of the live job ``name``, or None."""
        return self._by_name.get(name)


def decide_submission(
    owners: Owners,
    tenant: str,
    queue: str,
    submission: WorkloadSubmitted,
    *,
    admitted: bool = False,
    held: Mapping[str, TopologyDef] | None = None,
) -> list[Event]:
    """The tenant's groups, in ``queue`` and owned by it; or one WorkloadRejected naming the field.

    ``admitted`` as for ``group_submission``; ``held``: the system's topologies, which the tenant's
    workloads may name. A tenant declares none (KAI's Topology is cluster-scoped): a Topology in its
    submission is read for that submission's workloads only."""

    def rejected(error: str, field: str) -> list[Event]:
        return [WorkloadRejected(uid=submission.uid, error=error, field=field)]

    if submission.queue not in (None, queue):
        return rejected(f"{submission.queue!r} is not the queue it was submitted to ({queue!r})", "queue")
    events = group_submission(submission, admitted=admitted, held=held, declare=False)
    groups: list[Event] = []
    for event in events:
        if not isinstance(event, PodGroupCreated):
            return events  # the manifest's own rejection
        # A workload that names no queue falls back to DEFAULT_QUEUE: it goes to the subject's.
        if event.queue not in (queue, DEFAULT_QUEUE):
            return rejected(
                f"job {event.name} names queue {event.queue!r}, not the queue it was submitted to ({queue!r})",
                "queue",
            )
        holder = owners.of(event.name)
        if holder not in (None, tenant):
            # Whose job it is stays unsaid: one tenant learns nothing of another's.
            return rejected(
                f"job name {event.name} is taken by a running job of another owner", "metadata.name"
            )
        groups.append(msgspec.structs.replace(event, queue=queue, owner=tenant))
    return groups


def decide_cancel(owners: Owners, tenant: str, request: CancelRequested) -> list[Event]:
    """PodGroupDeleted if the job is the tenant's; else CancelRefused, the same whether or not it exists."""
    if owners.of(request.job) == tenant:
        return [PodGroupDeleted(name=request.job)]
    return [
        CancelRefused(uid=request.uid, job=request.job, error=f"tenant {tenant} has no job {request.job}")
    ]


def answer(request: WorkloadSubmitted | CancelRequested, decided: list[Event]) -> RequestAnswered:
    """What the tenant hears of its ``request``, given the events ``decided`` for it: the jobs made or
    deleted, or the refusal's reason, and nothing of the manifests (the tenant sent them)."""
    jobs = [e.name for e in decided if isinstance(e, PodGroupCreated | PodGroupDeleted)]
    error, field = "", ""
    for event in decided:
        if isinstance(event, WorkloadRejected | CancelRefused):
            error, field = event.error, getattr(event, "field", "")
    return RequestAnswered(
        request=event_type(request), uid=request.uid, jobs=[] if error else jobs, error=error, field=field
    )
