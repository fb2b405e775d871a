"""The plugin table: exact version, then the version wildcard, then the default."""

from __future__ import annotations

import subprocess
import sys

from muster.events import PodGroupCreated
from muster.grouping.group import group_manifests
from muster.grouping.groupers.default import group_unknown
from muster.grouping.registry import REGISTRY, Registry, default_registry


def _named(label: str):
    def grouper(obj, path, meta, ctx):
        return [PodGroupCreated(name=f"{label}.{meta.name}", queue="q")]

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
    assert (event.name, event.workload_uid, event.submitted_at) == ("muster.j", "u", 3.0)


def test_muster_job_kinds_are_known_whatever_was_imported_first():
    # A fresh interpreter that imports only the grouping entry point: the muster kinds must not
    # depend on some other module having been imported to register them.
    program = (
        "from muster.grouping.group import group_manifests\n"
        "job = {'name': 'j', 'queue': 'q', 'pods': [{'count': 1, 'resources': {'gpu': 1}}]}\n"
        "doc = {'apiVersion': 'muster.dev/v1', 'kind': 'Job', 'metadata': {'name': 'j'}, 'spec': job}\n"
        "cmd = {'apiVersion': 'muster.dev/v1', 'kind': 'Command', 'metadata': {'name': 'c'},\n"
        "       'spec': {'queue': 'q', 'command': ['true']}}\n"
        "print(sorted(g.name for g in group_manifests([doc, cmd], submitted_at=0.0, uid='u')))\n"
    )
    out = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "['c', 'j']"
