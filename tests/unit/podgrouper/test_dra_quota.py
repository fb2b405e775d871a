"""GPUs a workload claims through DRA are counted in its queue and placed as whole devices, as
``nvidia.com/gpu`` is (kai-semantics.md §17): a submission goes through the podgrouper into a simulated
cluster (a scenario file cannot carry DRA claims)."""

from __future__ import annotations

from .support import TWO_GPU_CLAIMS, group_yaml, simulated, two_pytorch_workers_claiming


def after_submission(gpu_limit: int):
    """Two 4-GPU nodes, a queue ``team`` of quota 2 and ``gpu_limit``, and a PyTorchJob of two workers
    each claiming two GPUs, after three cycles."""
    scenario = {
        "name": "dra",
        "nodes": [{"name": f"node-{i}", "resources": {"gpu": 4}} for i in range(2)],
        "queues": [{"name": "team", "resources": {"gpu": {"quota": 2, "limit": gpu_limit}}}],
        "jobs": [],
    }
    # naming no image, the workers are simulated pods the simulated nodes run
    workers = two_pytorch_workers_claiming().replace("image: i, ", "")
    groups = group_yaml(TWO_GPU_CLAIMS + "---" + workers, queue_override="team")
    return simulated(scenario, groups)


def test_claimed_gpus_are_placed_as_whole_devices_and_counted_in_the_queue():
    simulation = after_submission(gpu_limit=-1)
    placed = sorted(len(pod.gpus) for pod in simulation.fleet.bound() if pod.job == "train")
    assert placed == [2, 2]
    assert simulation.allocator.snapshot().queues["team"].allocated["gpu"] == 4


def test_a_queue_whose_limit_the_claimed_gpus_pass_keeps_the_job_pending():
    simulation = after_submission(gpu_limit=3)
    assert [pod for pod in simulation.fleet.bound() if pod.job == "train"] == []
