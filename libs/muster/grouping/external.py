"""KAI's externally created PodGroups (v0.15): ``kai.scheduler/skip-podgrouper: "true"`` on a pod or an owner.

KAI's podgrouper then leaves the pod alone, and the user's own ``PodGroup``
(``scheduling.run.ai/v2alpha2``) decides its gang, queue and priority. muster
groups every workload it is given and takes no PodGroup manifests, so such a
workload is refused, naming the annotation, rather than grouped against what
its author asked for. Any other value is ignored, as KAI ignores it.
"""

from __future__ import annotations

from muster.grouping.errors import ManifestError
from muster.grouping.fields import join

SKIP_PODGROUPER = "kai.scheduler/skip-podgrouper"


def refuse_skip_podgrouper(annotations: dict[str, str], path: str) -> None:
    """Refuse metadata (at ``path``) that asks the podgrouper to leave its pods alone."""
    if annotations.get(SKIP_PODGROUPER) == "true":
        raise ManifestError(
            join(join(path, "annotations"), SKIP_PODGROUPER),
            "muster groups every workload it is given and takes no externally created PodGroup; "
            "remove the annotation to have it grouped by its kind's rule",
        )
