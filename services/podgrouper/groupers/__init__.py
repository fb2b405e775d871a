"""The built-in plugins, one module per workload family, and the table that routes to them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from services.podgrouper.groupers import (
    argo,
    core,
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

if TYPE_CHECKING:
    from services.podgrouper.registry import Registry

# (group, kind, plugin). Every entry takes any version, as KAI's wildcard entries do.
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
)


def install(registry: Registry) -> None:
    """Register every built-in plugin in ``registry``."""
    for group, kind, plugin in BUILTIN:
        registry.register(group, kind, plugin)
