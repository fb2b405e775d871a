"""The plain muster job kind (``apiVersion: muster.dev/v1``, ``kind: Job``).

Its ``spec`` is one job in the scenario format, so a scenario applied to a
live system is grouped exactly as ``muster simulate`` groups it. It has
nothing to run: its pods are simulated, and only the simulated fleet's nodes
take them (a process to run is the Command kind's).
"""

from __future__ import annotations

from typing import Any

from muster import runtimes
from muster.events import PodGroupCreated
from muster.grouping.errors import ManifestError
from muster.grouping.model import Context, Meta
from muster.scenario import ScenarioError, job_to_podgroup

API_GROUP = "muster.dev"


def manifest(job: dict[str, Any]) -> dict[str, Any]:
    """A scenario job as a manifest the podgrouper accepts."""
    return {
        "apiVersion": f"{API_GROUP}/v1",
        "kind": "Job",
        "metadata": {"name": job.get("name")},
        "spec": job,
    }


def group_muster_job(obj: dict[str, Any], path: str, meta: Meta, ctx: Context) -> list[PodGroupCreated]:
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        raise ManifestError(
            f"{path}spec" if not path else f"{path}.spec", "expected a job in the scenario format"
        )
    spec = {"name": meta.name, **spec}
    try:
        group = job_to_podgroup(
            spec, path="spec", kind="Job", workload_uid=ctx.uid, topologies=ctx.batch.topologies()
        )
    except ScenarioError as exc:
        raise ManifestError(exc.path, exc.message) from None
    if group.runtime != runtimes.SIMULATED:
        raise ManifestError(
            "spec.runtime",
            f"a muster Job has nothing to run, so its pods are simulated, not {group.runtime}; "
            "a command runs as a Command (`muster run`)",
        )
    return [group]
