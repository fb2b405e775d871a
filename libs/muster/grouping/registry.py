"""Which plugin groups which kind: an explicit table keyed by (group, kind).

A lookup tries the exact ``(group, version, kind)``, then ``(group, "*", kind)``;
anything else goes to the default plugin. Every kind muster knows, its own
job kinds included, is listed in ``BUILTIN`` below: what a manifest groups to
never depends on which modules some caller happened to import first.
"""

from __future__ import annotations

from dataclasses import dataclass

from muster.grouping import command_job, muster_job
from muster.grouping.groupers import (
    argo,
    core,
    dynamo,
    grove,
    jobset,
    knative,
    kubeflow,
    lws,
    notebook,
    ray,
    scheduled,
    spark,
    trainjob,
)
from muster.grouping.groupers.default import group_spotrequest, group_unknown
from muster.grouping.model import GrouperFn

ANY_VERSION = "*"
# Kinds come from submitted manifests: bound what the lookup remembers of them.
_MAX_REMEMBERED = 1024


def split_api_version(api_version: str) -> tuple[str, str]:
    """``"apps/v1"`` to ``("apps", "v1")``; the core group is ``""``."""
    group, _, version = api_version.rpartition("/")
    return group, version


@dataclass(frozen=True)
class Entry:
    grouper: GrouperFn
    known: bool
    """False only for the default plugin: the kind is not one muster knows."""


class Registry:
    """Plugins keyed by (group, version, kind); ``version`` may be ``"*"``."""

    def __init__(self, default: GrouperFn) -> None:
        self._plugins: dict[tuple[str, str, str], GrouperFn] = {}
        self._default = default
        # Every manifest is looked up, and a submission repeats a few kinds: answers are
        # remembered by (apiVersion, kind) until the table changes.
        self._entries: dict[tuple[str, str], Entry] = {}

    def register(self, group: str, kind: str, grouper: GrouperFn, *, version: str = ANY_VERSION) -> None:
        """Route ``group/version`` ``kind`` to ``grouper``; a later call replaces an earlier one."""
        self._plugins[(group, version, kind)] = grouper
        self._entries.clear()

    def lookup(self, api_version: str, kind: str) -> Entry:
        """The plugin for ``api_version`` ``kind``: exact version, wildcard, else the default."""
        entry = self._entries.get((api_version, kind))
        if entry is None:
            if len(self._entries) >= _MAX_REMEMBERED:
                self._entries.clear()
            entry = self._entries[(api_version, kind)] = self._find(api_version, kind)
        return entry

    def _find(self, api_version: str, kind: str) -> Entry:
        group, version = split_api_version(api_version)
        for key in ((group, version, kind), (group, ANY_VERSION, kind)):
            if key in self._plugins:
                return Entry(self._plugins[key], known=True)
        return Entry(self._default, known=False)

    def kinds(self) -> list[tuple[str, str, str]]:
        """Every registered (group, version, kind), sorted."""
        return sorted(self._plugins)


# (group, kind, plugin): every kind muster groups. Every entry takes any version, as KAI's wildcard entries do.
BUILTIN = (
    ("", "Pod", core.group_pod),
    ("apps", "Deployment", core.group_deployment),
    ("apps", "ReplicaSet", core.group_replicated),
    ("apps", "StatefulSet", core.group_replicated),
    ("batch", "Job", core.group_job),
    ("batch", "CronJob", core.group_cronjob),
    ("kubeflow.org", "TFJob", kubeflow.group_distributed),
    ("kubeflow.org", "XGBoostJob", kubeflow.group_distributed),
    ("kubeflow.org", "JAXJob", kubeflow.group_distributed),
    ("kubeflow.org", "PyTorchJob", kubeflow.group_pytorch),
    ("kubeflow.org", "MPIJob", kubeflow.group_mpi),
    ("kubeflow.org", "PaddleJob", kubeflow.group_paddle),
    ("kubeflow.org", "Notebook", notebook.group_notebook),
    ("trainer.kubeflow.org", "TrainJob", trainjob.group_trainjob),
    ("ray.io", "RayCluster", ray.group_raycluster),
    ("ray.io", "RayJob", ray.group_rayjob),
    ("ray.io", "RayService", ray.group_rayservice),
    ("jobset.x-k8s.io", "JobSet", jobset.group_jobset),
    ("leaderworkerset.x-k8s.io", "LeaderWorkerSet", lws.group_lws),
    ("sparkoperator.k8s.io", "SparkApplication", spark.group_spark),
    ("sparkoperator.k8s.io", "ScheduledSparkApplication", scheduled.group_scheduled_spark),
    ("argoproj.io", "Workflow", argo.group_workflow),
    ("argoproj.io", "CronWorkflow", scheduled.group_cron_workflow),
    ("serving.knative.dev", "Service", knative.group_knative_service),
    ("grove.io", "PodCliqueSet", grove.group_podcliqueset),
    ("grove.io", "PodGangSet", grove.group_podcliqueset),
    (dynamo.API_GROUP, dynamo.KIND, dynamo.group_dynamo_graph),
    ("egx.nvidia.io", "SPOTRequest", group_spotrequest),
    (muster_job.API_GROUP, "Job", muster_job.group_muster_job),
    (command_job.API_GROUP, command_job.KIND, command_job.group_command),
)


def default_registry() -> Registry:
    """A fresh registry holding every built-in plugin."""
    registry = Registry(default=group_unknown)
    for group, kind, plugin in BUILTIN:
        registry.register(group, kind, plugin)
    return registry


REGISTRY = default_registry()


def register(group: str, kind: str, grouper: GrouperFn, *, version: str = ANY_VERSION) -> None:
    """Add a plugin to the registry ``group_manifests`` uses."""
    REGISTRY.register(group, kind, grouper, version=version)
