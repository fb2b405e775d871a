"""The fault suite's fleet, queues and jobs, drawn from a seed.

Every job has a ``duration`` so the run drains by itself: single-GPU pods,
half-GPU pods sharing a device, and two-pod gangs, in two queues of one
department whose quotas split the fleet, so reclaim has work to do too.
"""

from __future__ import annotations

import random
from typing import Any

from muster.events import NodeSpec, QueueResource, QueueSpec, Resources
from muster.grouping.muster_job import manifest

GPUS_PER_NODE = 8
QUEUES = ("team-a", "team-b")


def fleet(nodes: int) -> list[NodeSpec]:
    return [
        NodeSpec(
            name=f"node-{i:04d}",
            resources=Resources(gpu=GPUS_PER_NODE, gpu_memory=80 * 2**30, cpu=64_000, memory=512 * 2**30),
        )
        for i in range(nodes)
    ]


def queues(nodes: int) -> list[QueueSpec]:
    half = nodes * GPUS_PER_NODE / 2
    unlimited = QueueResource(quota=-1, over_quota_weight=1, limit=-1)
    dept = QueueSpec(name="dept", resources={"gpu": unlimited}, order=0)
    return [dept] + [
        QueueSpec(
            name=name,
            parent="dept",
            resources={"gpu": QueueResource(quota=half, over_quota_weight=1, limit=-1)},
            order=i + 1,
        )
        for i, name in enumerate(QUEUES)
    ]


def jobs(
    count: int, seed: int, *, min_duration: float = 1.0, max_duration: float = 4.0
) -> list[dict[str, Any]]:
    """``count`` job manifests of the muster job kind, the same for the same seed."""
    rng = random.Random(seed)
    out = []
    for i in range(count):
        shape = rng.random()
        if shape < 0.6:
            pods = [{"count": 1, "resources": {"gpu": 1, "cpu": 2, "memory": "8Gi"}}]
        elif shape < 0.8:
            pods = [{"count": 1, "resources": {"gpu": 0.5, "cpu": 1, "memory": "4Gi"}}]
        else:
            pods = [{"count": 2, "resources": {"gpu": 1, "cpu": 2, "memory": "8Gi"}}]
        spec = {
            "name": f"chaos-{i:05d}",
            "queue": QUEUES[rng.randrange(len(QUEUES))],
            "duration": round(rng.uniform(min_duration, max_duration), 2),
            "pods": pods,
        }
        out.append(manifest(spec))
    return out
