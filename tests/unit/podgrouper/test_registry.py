"""The plugin table: exact version, then the version wildcard, then the default."""

from __future__ import annotations

from muster.events import PodGroupCreated
from muster.grouping.group import group_manifests
from muster.grouping.groupers.default import group_unknown
from muster.grouping.registry import REGISTRY, Registry, default_registry


def _named(label: str):
    def grouper(obj, path, meta, ctx):
        return [PodGroupCreated(name=f"{label}:{meta.name}", queue="q")]

    return grouper


def test_an_exact_version_wins_over_the_wildcard():
    registry = Registry(default=group_unknown)
    registry.register("example.com", "Thing", _named("any"))
    registry.register("example.com", "Thing", _named("v2"), version="v2")
    assert (
        registry.lookup("example.com/v2", "Thing").grouper
        is not registry.lookup("example.com/v1", "Thing").grouper
    )


def test_an_unregistered_kind_goes_to_the_default_plugin():
    entry = Registry(default=group_unknown).lookup("example.com/v1", "Thing")
    assert (entry.grouper, entry.known) == (group_unknown, False)


def test_every_kind_of_the_issue_is_registered():
    kinds = {kind for _, _, kind in REGISTRY.kinds()}
    assert {
        "Pod",
        "Deployment",
        "ReplicaSet",
        "StatefulSet",
        "Job",
        "CronJob",
        "PyTorchJob",
        "TFJob",
        "MPIJob",
        "XGBoostJob",
        "JAXJob",
        "PaddleJob",
        "Notebook",
        "TrainJob",
        "RayCluster",
        "RayJob",
        "RayService",
        "JobSet",
        "LeaderWorkerSet",
        "SparkApplication",
        "Workflow",
        "Service",
        "PodCliqueSet",
    } <= kinds


def test_a_plugin_registered_from_outside_groups_its_kind_and_may_return_finished_events():
    registry = default_registry()
    registry.register("muster.dev", "Job", _named("muster"))
    doc = {"apiVersion": "muster.dev/v1", "kind": "Job", "metadata": {"name": "j"}, "spec": {}}
    [event] = group_manifests([doc], registry=registry, uid="u", submitted_at=3.0)
    assert (event.name, event.workload_uid, event.submitted_at) == ("muster:j", "u", 3.0)
