"""Helpers for the podgrouper tests: the upstream manifests and a one-call grouping."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from muster.events import PodGroupCreated
from muster.grouping.group import group_manifests

MANIFESTS = Path(__file__).resolve().parents[3] / ".." / "shared" / "data" / "manifests"
GI = 2**30
MI = 2**20


NETWORK_TOPOLOGY = """
apiVersion: kai.scheduler/v1alpha1
kind: Topology
metadata: {name: network}
spec:
  levels:
    - {nodeLabel: accelerator.nvidia.com/rack, alias: rack}
    - {nodeLabel: kubernetes.io/hostname, alias: node}
"""
"""A KAI Topology of racks over nodes, each level with an alias (KAI's examples/topology-aliases)."""

WORKER_SPEC = "spec.pytorchReplicaSpecs.Worker.template.spec"
"""Where ``two_pytorch_workers``' pod spec sits: refusals name fields below it."""


def two_pytorch_workers(resources: str) -> str:
    """A PyTorchJob ``train`` of two workers whose one container has ``resources`` (YAML flow text); more
    pod-spec fields may be appended, indented as its ``containers``."""
    return f"""
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {{name: train}}
spec:
  pytorchReplicaSpecs:
    Worker:
      replicas: 2
      template:
        spec:
          containers: [{{name: c, image: i, resources: {resources}}}]
"""


TWO_GPU_CLAIMS = """
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: two-gpus}
spec: {spec: {devices: {requests: [{name: gpu, exactly: {deviceClassName: gpu.nvidia.com, count: 2}}]}}}
"""
"""A DRA ResourceClaimTemplate ``two-gpus`` whose claims each hold two GPUs."""


def two_pytorch_workers_claiming(template: str = "two-gpus") -> str:
    """``two_pytorch_workers`` whose pods each claim from the ResourceClaimTemplate ``template``."""
    return (
        two_pytorch_workers("{claims: [{name: gpus}]}")
        + f"          resourceClaims: [{{name: gpus, resourceClaimTemplateName: {template}}}]\n"
    )


def argo_workflow(main: str) -> str:
    """An Argo Workflow ``wf`` whose entry template ``main`` holds ``main`` (YAML, indented under it)."""
    return f"""
apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata: {{name: wf}}
spec:
  entrypoint: main
  templates:
    - name: main
      {main}
"""


def hosts(name: str, queue: str, count: int = 3, gpu: int = 4) -> dict[str, Any]:
    """A scenario ``name`` (scenario-format dict) of ``count`` nodes ``node-<i>`` of ``gpu`` GPUs, each its
    own ``kubernetes.io/hostname``, with the one queue ``queue`` and no jobs of its own."""
    return {
        "name": name,
        "nodes": [
            {
                "name": f"node-{i}",
                "labels": {"kubernetes.io/hostname": f"node-{i}"},
                "resources": {"gpu": gpu},
            }
            for i in range(count)
        ],
        "queues": [{"name": queue}],
        "jobs": [],
    }


def simulated(scenario: dict[str, Any], groups: list[PodGroupCreated], cycles: int = 3) -> Any:
    """A ``Simulation`` of ``scenario`` (scenario-format dict) given ``groups`` before its first cycle, after
    ``cycles`` cycles."""
    from muster.scenario import parse_scenario, scenario_events
    from muster.simulate import Simulation

    parsed = parse_scenario(scenario)
    simulation = Simulation(parsed)
    simulation.publish(scenario_events(parsed))
    simulation.publish(groups)
    simulation.publish(simulation.fleet.step(0.0))
    for n in range(cycles):
        simulation.fold.published(n)
        simulation.cycle(float(n))
    return simulation


def manifest_docs(relative: str) -> list[dict[str, Any]]:
    """Every document of one upstream manifest file (skipping the test if shared/ is absent)."""
    path = MANIFESTS / relative
    if not MANIFESTS.is_dir():
        pytest.skip(
            f"upstream manifests not found at {MANIFESTS.resolve()} (shared/ must sit beside the repo)"
        )
    with path.open(encoding="utf-8") as handle:
        return [doc for doc in yaml.safe_load_all(handle) if doc is not None]


def group_file(relative: str, **kwargs: Any) -> list[PodGroupCreated]:
    return group_manifests(manifest_docs(relative), **kwargs)


def group_yaml(text: str, **kwargs: Any) -> list[PodGroupCreated]:
    return group_manifests([d for d in yaml.safe_load_all(text) if d is not None], **kwargs)


def only(groups: list[PodGroupCreated]) -> PodGroupCreated:
    assert len(groups) == 1, [g.name for g in groups]
    return groups[0]


def pods_by_role(group: PodGroupCreated) -> dict[str, Any]:
    return {p.role: p for p in group.pods}


def total_pods(group: PodGroupCreated) -> int:
    return sum(p.count for p in group.pods)
