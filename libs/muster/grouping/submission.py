"""A submitted workload in, its gangs (or why not) out: what the podgrouper decides, as data."""

from __future__ import annotations

from collections.abc import Mapping

from muster.events import Event, WorkloadRejected, WorkloadSubmitted
from muster.grouping.errors import ManifestError
from muster.grouping.group import group_and_declare
from muster.topologies import TopologyDef

TENANT_TOPOLOGY = (
    "a Topology is a cluster object, which a tenant does not declare: a tenant's workloads name the "
    "ones the system holds, or carry their own in the same submission"
)


def group_submission(
    submission: WorkloadSubmitted,
    *,
    admitted: bool = False,
    held: Mapping[str, TopologyDef] | None = None,
    declare: bool = True,
) -> list[Event]:
    """The TopologyDeclared for each KAI Topology the workload declares, then PodGroupCreated for each
    of its gangs; or one WorkloadRejected naming the field.

    ``admitted``: the submission came through a reader's admission (``muster.bus.admission``),
    which bounds the manifests' nesting exactly as grouping would, so they are not walked again.
    ``held``: the topologies the system holds (``muster.held_topologies``), which the workload's
    constraints may name. ``declare``: False for a submitter that may not change the system's
    Topologies (a tenant): its own are read for its workloads only, and one alone is refused.
    """
    try:
        grouped = group_and_declare(
            submission.manifests,
            held=held or {},
            submitted_at=submission.submitted_at,
            uid=submission.uid,
            queue_override=submission.queue,
            nesting_bounded=admitted,
        )
    except ManifestError as exc:
        return [WorkloadRejected(uid=submission.uid, error=exc.message, field=exc.path)]
    if declare:
        return [*grouped.declared, *grouped.groups]
    if not grouped.groups:
        return [WorkloadRejected(uid=submission.uid, error=TENANT_TOPOLOGY, field="kind")]
    return list(grouped.groups)
