"""A submitted workload in, its gangs (or why not) out: what the podgrouper decides, as data."""

from __future__ import annotations

from muster.events import Event, WorkloadRejected, WorkloadSubmitted
from muster.grouping.errors import ManifestError
from muster.grouping.group import group_manifests


def group_submission(submission: WorkloadSubmitted, *, admitted: bool = False) -> list[Event]:
    """PodGroupCreated for each gang of the workload, or one WorkloadRejected naming the field.

    ``admitted``: the submission came through a reader's admission (``muster.bus.admission``),
    which bounds the manifests' nesting exactly as grouping would, so they are not walked again.
    """
    try:
        return list(
            group_manifests(
                submission.manifests,
                submitted_at=submission.submitted_at,
                uid=submission.uid,
                queue_override=submission.queue,
                nesting_bounded=admitted,
            )
        )
    except ManifestError as exc:
        return [WorkloadRejected(uid=submission.uid, error=exc.message, field=exc.path)]
