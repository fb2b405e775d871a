"""GPUs a workload claims through DRA are counted in its queue and placed as whole devices, as
``nvidia.com/gpu`` is (kai-semantics.md §17): a submission goes through the podgrouper into a simulated
cluster (a scenario file cannot carry DRA claims)."""

from __future__ import annotations

from muster.scenario import parse_scenario, scenario_events
from muster.simulate import Simulation

from .support import group_yaml

SUBMISSION = """
apiVersion: resource.k8s.io/v1beta1
kind: ResourceClaimTemplate
metadata: {name: two-gpus}
spec: {spec: {devices: {requests: [{name: gpu, deviceClassName: gpu.nvidia.com, count: 2}]}}}
---
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: train, labels: {kai.scheduler/queue: team}}
spec:
  pytorchReplicaSpecs:
    Worker:
      replicas: 2
      template:
        spec:
          resourceClaims: [{name: gpus, resourceClaimTemplateName: two-gpus}]
          containers: [{name: c, resources: {claims: [{name: gpus}]}}]
"""


def simulated(gpu_limit: int) -> Simulation:
    """Two 4-GPU nodes, a queue ``team`` with ``gpu_limit``, and the submission after three cycles."""
    scenario = parse_scenario(
        {
            "name": "dra",
            "nodes": [{"name": f"node-{i}", "resources": {"gpu": 4}} for i in range(2)],
            "queues": [{"name": "team", "resources": {"gpu": {"quota": 2, "limit": gpu_limit}}}],
            "jobs": [],
        }
    )
    simulation = Simulation(scenario)
    simulation.publish(scenario_events(scenario))
    simulation.publish(group_yaml(SUBMISSION))
    simulation.publish(simulation.fleet.step(0.0))
    for n in range(3):
        simulation.fold.published(n)
        simulation.cycle(float(n))
    return simulation


def test_claimed_gpus_are_placed_as_whole_devices_and_counted_in_the_queue():
    simulation = simulated(gpu_limit=-1)
    placed = sorted(len(pod.gpus) for pod in simulation.fleet.bound() if pod.job == "train")
    assert placed == [2, 2]
    assert simulation.allocator.snapshot().queues["team"].allocated["gpu"] == 4


def test_a_queue_whose_limit_the_claimed_gpus_pass_keeps_the_job_pending():
    simulation = simulated(gpu_limit=3)
    assert [pod for pod in simulation.fleet.bound() if pod.job == "train"] == []
