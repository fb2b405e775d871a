"""The labels a workload's controller puts on the pods it creates, as one table per controller.

A pod carries its template's ``metadata.labels`` plus what its controller adds; users' pod
(anti-)affinity very often selects the latter (a PyTorchJob worker's anti-affinity on
``training.kubeflow.org/job-name``). A grouper asks ``synthesised`` for the labels of one PodSpec
entry and ``muster.grouping.model.pod_template`` merges the template's own over them (the template
wins; Grove's labels win over a clique's, as Grove merges them). Only labels that are the same for every pod of the entry are synthesised; the keys whose value
differs per pod, or that muster cannot know (a uid, a hash), are in ``PER_POD_KEYS``, and a manifest
term selecting one is refused (``refuse_per_pod_selectors``): muster's per-role PodSpec cannot honour it.

Values are templates over the fields a grouper passes: ``name`` (the controller's object), ``role``
(the replica type or replicatedJob as the manifest spells it; a Ray node type; a Spark role),
``role_lower``, a Ray worker ``group``, a Knative ``revision``, and for a JobSet's Jobs ``index``,
``global_index``, ``replicas``, ``global_replicas``; for a Grove PodClique its ``podclique``,
``podgang``, PodCliqueSet ``replica``, ``scaling_group``, ``scaling_index`` and ``base`` PodGang.

A TFJob without a Chief or Master labels its worker 0 alone as master: the grouper gives worker 0 a
PodSpec entry of its own (``tfjob_worker_zero_is_master``), as a JobSet's Jobs each get one.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Any, NamedTuple

from muster.field_paths import join
from muster.pod_constraints import PREFERRED, REQUIRED, ConstraintError


class Controller(NamedTuple):
    """The labels one controller gives every pod of a PodSpec entry."""

    common: Mapping[str, str]
    by_role: Mapping[str, Mapping[str, str]] = MappingProxyType({})
    """Extra labels for one role (keyed as the grouper names the role)."""


_KF = "training.kubeflow.org/"
# kubeflow/training-operator v1 (pkg/controller.v1/common: GenLabels gives job-name and operator-name,
# ReconcilePods adds replica-type = the lower-cased replica type, and job-role=master where the kind's
# IsMasterRole says so). operator-name is each reconciler's controllerName ("pytorchjob-controller").
_KUBEFLOW_COMMON = {_KF + "job-name": "{name}", _KF + "replica-type": "{role_lower}"}
_MASTER = MappingProxyType({_KF + "job-role": "master"})


def _training_operator(operator: str, *masters: str) -> Controller:
    return Controller(
        MappingProxyType({**_KUBEFLOW_COMMON, _KF + "operator-name": operator}),
        MappingProxyType(dict.fromkeys(masters, _MASTER)),
    )


_RAY_APP = {
    # kuberay ray-operator/controllers/ray/common/pod.go labelPod: the template's own labels win there
    # too; head pods are in group "headgroup" (utils.RayNodeHeadGroupLabelValue).
    "ray.io/is-ray-node": "yes",
    "app.kubernetes.io/name": "kuberay",
    "app.kubernetes.io/created-by": "kuberay-operator",
}
_RAY_ROLES = MappingProxyType(
    {
        "head": MappingProxyType({"ray.io/node-type": "head", "ray.io/group": "headgroup"}),
        "worker": MappingProxyType({"ray.io/node-type": "worker", "ray.io/group": "{group}"}),
    }
)
_RAY_NAMED_ROLES = MappingProxyType(
    {
        "head": MappingProxyType({**_RAY_ROLES["head"], "ray.io/identifier": "{name}-head"}),
        "worker": MappingProxyType({**_RAY_ROLES["worker"], "ray.io/identifier": "{name}-worker"}),
    }
)

_GROVE_STANDALONE = MappingProxyType({"app.kubernetes.io/component": "pcs-podclique"})
_GROVE_SCALING = MappingProxyType(
    {
        "app.kubernetes.io/component": "pcsg-podclique",
        "grove.io/podcliquescalinggroup": "{scaling_group}",
        "grove.io/podcliquescalinggroup-replica-index": "{scaling_index}",
    }
)

CONTROLLERS: Mapping[str, Controller] = MappingProxyType(
    {
        # Kubernetes' Job strategy (pkg/apis/batch: generateSelector) labels the template with
        # job-name and batch.kubernetes.io/job-name (both, since 1.27) = the Job's name.
        "Job": Controller(MappingProxyType({"batch.kubernetes.io/job-name": "{name}", "job-name": "{name}"})),
        # Training-operator TFJob: IsMasterRole is Chief or Master when the job has one, else worker 0
        # (``tfjob_worker_zero_is_master``). XGBoostJob, PaddleJob, PyTorchJob: Master. MPIJob v1:
        # Launcher. JAXJob: no role by type.
        "TFJob": _training_operator("tfjob-controller", "Chief", "Master"),
        "PyTorchJob": _training_operator("pytorchjob-controller", "Master"),
        "XGBoostJob": _training_operator("xgboostjob-controller", "Master"),
        "PaddleJob": _training_operator("paddlejob-controller", "Master"),
        "JAXJob": _training_operator("jaxjob-controller"),
        "MPIJob/v1": _training_operator("mpijob-controller", "Launcher"),
        # kubeflow/mpi-operator v2 (pkg/controller/mpi_job_controller.go defaultLabels): operator-name
        # mpi-operator, job-name, and job-role launcher or worker.
        "MPIJob/v2beta1": Controller(
            MappingProxyType(
                {
                    _KF + "operator-name": "mpi-operator",
                    _KF + "job-name": "{name}",
                    _KF + "job-role": "{role_lower}",
                }
            )
        ),
        # kubernetes-sigs/jobset api/jobset/v1alpha2/jobset_types.go label keys, set on each child Job's
        # pod template (controllers/jobset_controller.go labelAndAnnotateObject); the Job is named
        # <jobset>-<replicatedJob>-<index> and the Job strategy adds its job-name labels.
        "JobSet": Controller(
            MappingProxyType(
                {
                    "jobset.sigs.k8s.io/jobset-name": "{name}",
                    "jobset.sigs.k8s.io/replicatedjob-name": "{role}",
                    "jobset.sigs.k8s.io/replicatedjob-replicas": "{replicas}",
                    "jobset.sigs.k8s.io/job-index": "{index}",
                    "jobset.sigs.k8s.io/job-global-index": "{global_index}",
                    "jobset.sigs.k8s.io/global-replicas": "{global_replicas}",
                    "batch.kubernetes.io/job-name": "{name}-{role}-{index}",
                    "job-name": "{name}-{role}-{index}",
                }
            )
        ),
        "RayCluster": Controller(
            MappingProxyType({**_RAY_APP, "ray.io/cluster": "{name}"}), _RAY_NAMED_ROLES
        ),
        # A RayJob's or RayService's cluster gets a generated name: ray.io/cluster is not known.
        "RayGeneratedCluster": Controller(MappingProxyType(_RAY_APP), _RAY_ROLES),
        # kubernetes-sigs/lws api/leaderworkerset/v1 SetNameLabelKey on every pod; its group-index,
        # worker-index and group-key differ per group or pod (PER_POD_KEYS).
        "LeaderWorkerSet": Controller(MappingProxyType({"leaderworkerset.sigs.k8s.io/name": "{name}"})),
        # kubeflow/kubeflow notebook-controller generateStatefulSet: the pod template's labels.
        "Notebook": Controller(MappingProxyType({"statefulset": "{name}", "notebook-name": "{name}"})),
        # knative/serving pkg/reconciler/revision/resources/meta.go makeLabels: the Revision's labels
        # (service, configuration, revision) and app = the revision's name unless the template sets it.
        "KnativeService": Controller(
            MappingProxyType(
                {
                    "serving.knative.dev/service": "{name}",
                    "serving.knative.dev/configuration": "{name}",
                    "serving.knative.dev/revision": "{revision}",
                    "app": "{revision}",
                }
            )
        ),
        # kubeflow/spark-operator (app-name, launched-by-spark-operator) and Spark's own spark-role.
        "SparkApplication": Controller(
            MappingProxyType(
                {
                    "sparkoperator.k8s.io/app-name": "{name}",
                    "sparkoperator.k8s.io/launched-by-spark-operator": "true",
                    "spark-role": "{role}",
                }
            )
        ),
        # A ScheduledSparkApplication's runs get generated names: app-name is not known.
        "ScheduledSparkApplication": Controller(
            MappingProxyType(
                {"sparkoperator.k8s.io/launched-by-spark-operator": "true", "spark-role": "{role}"}
            )
        ),
        # argoproj/argo-workflows workflow/controller/workflowpod.go createWorkflowPod: the workflow's
        # name and completed=false, under the template's and podMetadata's labels.
        "Workflow": Controller(
            MappingProxyType(
                {"workflows.argoproj.io/workflow": "{name}", "workflows.argoproj.io/completed": "false"}
            )
        ),
        # A CronWorkflow's runs get generated names.
        "CronWorkflow": Controller(MappingProxyType({"workflows.argoproj.io/completed": "false"})),
        # ai-dynamo/grove: a pod gets the PodCliqueSet's managed-by / part-of, its PodClique's labels
        # (podcliqueset/components/podclique and podcliquescalinggroup/components/podclique getLabels)
        # and its own (podclique/components/pod getLabels); one PodSpec entry is one PodClique. Grove's
        # labels win over the clique's own (see ``grove.py``).
        "PodCliqueSet": Controller(
            MappingProxyType(
                {
                    "app.kubernetes.io/managed-by": "grove-operator",
                    "app.kubernetes.io/part-of": "{name}",
                    "app.kubernetes.io/name": "{podclique}",
                    "grove.io/podclique": "{podclique}",
                    "grove.io/podgang": "{podgang}",
                    "grove.io/podcliqueset-replica-index": "{replica}",
                }
            ),
            MappingProxyType(
                {
                    # a clique outside every scaling group
                    "clique": _GROVE_STANDALONE,
                    # a scaling group's replica in the base PodGang, and one in a scaled PodGang
                    "scaling": _GROVE_SCALING,
                    "scaled": MappingProxyType({**_GROVE_SCALING, "grove.io/base-podgang": "{base}"}),
                }
            ),
        ),
    }
)

PER_POD_KEYS = frozenset(
    {
        _KF + "replica-index",
        "batch.kubernetes.io/job-completion-index",
        "controller-uid",
        "batch.kubernetes.io/controller-uid",
        "pod-template-hash",
        "controller-revision-hash",
        "statefulset.kubernetes.io/pod-name",
        "apps.kubernetes.io/pod-index",
        "jobset.sigs.k8s.io/job-key",
        "jobset.sigs.k8s.io/jobset-uid",
        "leaderworkerset.sigs.k8s.io/worker-index",
        "leaderworkerset.sigs.k8s.io/group-index",
        "leaderworkerset.sigs.k8s.io/group-key",
        "leaderworkerset.sigs.k8s.io/template-revision-hash",
        "serving.knative.dev/revisionUID",
        "sparkoperator.k8s.io/submission-id",
        "spark-app-selector",
        "spark-exec-id",
        "grove.io/podclique-pod-index",
        "grove.io/pod-template-hash",
    }
)
"""Label keys a controller gives each pod a value of its own (an index), or one muster cannot know (a
uid, a hash): muster's pods do not carry them."""


def synthesised(controller: str, **fields: Any) -> dict[str, str]:
    """The labels ``controller`` (a key of ``CONTROLLERS``) gives every pod of one PodSpec entry;
    ``fields`` fill the values (``name``, ``role``, ...)."""
    entry = CONTROLLERS[controller]
    role = str(fields.get("role", ""))
    values = {"role_lower": role.lower(), **fields}
    extra = entry.by_role.get(role, {})
    return {key: value.format_map(values) for key, value in (*entry.common.items(), *extra.items())}


def tfjob_worker_zero_is_master(replica_types: Iterable[str]) -> bool:
    """Whether a TFJob with these replica types labels its worker 0 (alone) ``job-role: master``: the
    training-operator's TFJob IsMasterRole, when the job has neither a Chief nor a Master."""
    types = set(replica_types)
    return "Worker" in types and not types & {"Chief", "Master"}


def master_role_labels() -> dict[str, str]:
    """The label the training-operator gives a pod of the master role (``job-role: master``)."""
    return dict(_MASTER)


def kubeflow_controller(kind: str, api_version: str) -> str:
    """The ``CONTROLLERS`` key of a Kubeflow training job: MPIJob's labels depend on its operator
    (training-operator for v1, mpi-operator for v2beta1)."""
    if kind == "MPIJob":
        return "MPIJob/v2beta1" if api_version.endswith("/v2beta1") else "MPIJob/v1"
    return kind


def refuse_per_pod_selectors(affinity: Any) -> None:
    """Refuse a pod (anti-)affinity term, required or preferred, whose ``labelSelector`` selects a key
    of ``PER_POD_KEYS``: muster's pods do not carry it, so the term cannot be honoured. ``affinity`` is
    a pod spec's ``affinity`` that ``muster.pod_constraints`` has already read; paths are relative to
    the pod spec."""
    if not isinstance(affinity, dict):
        return
    for kind in ("podAffinity", "podAntiAffinity"):
        part = affinity.get(kind)
        if not isinstance(part, dict):
            continue
        kpath = join("affinity", kind)
        for i, term in enumerate(part.get(REQUIRED) or ()):
            _refuse_selector(term, join(join(kpath, REQUIRED), i))
        for i, weighted in enumerate(part.get(PREFERRED) or ()):
            path = join(join(join(kpath, PREFERRED), i), "podAffinityTerm")
            _refuse_selector(weighted["podAffinityTerm"], path)


def _refuse_selector(term: dict[str, Any], path: str) -> None:
    selector = term.get("labelSelector") or {}
    spath = join(path, "labelSelector")
    for key in selector.get("matchLabels") or {}:
        if key in PER_POD_KEYS:
            raise ConstraintError(join(join(spath, "matchLabels"), key), _why(key))
    for i, req in enumerate(selector.get("matchExpressions") or ()):
        if req["key"] in PER_POD_KEYS:
            raise ConstraintError(join(join(join(spath, "matchExpressions"), i), "key"), _why(req["key"]))


def _why(key: str) -> str:
    return (
        f"{key!r} differs from pod to pod (or is not known before the pods exist): muster's pods do not "
        "carry it, so a term selecting it cannot be honoured"
    )
