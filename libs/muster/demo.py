"""The demo workload: a small GPU fleet, a queue tree, and a realistic mix of jobs.

Deterministic (a fixed seed), so two demos tell the same story: gangs of
training pods, elastic jobs, notebooks on GPU fractions, inference
services, arriving in waves on two racks of 8-GPU nodes.
"""

from __future__ import annotations

import random
from typing import Any


def demo_scenario(*, nodes: int = 12, jobs: int = 60, seed: int = 7) -> dict[str, Any]:
    """A scenario (as parsed YAML) for ``muster demo``."""
    rng = random.Random(seed)
    fleet = [
        {
            "name": f"gpu-{i:02d}",
            "labels": {"topology.rack": f"rack-{i % 2}", "zone": "a"},
            "resources": {"gpu": 8, "gpu_memory": "80Gi", "cpu": 96, "memory": "1024Gi"},
            "gpu_model": "H100" if i % 3 else "A100",
        }
        for i in range(nodes)
    ]
    queues = [
        {"name": "research", "resources": {"gpu": {"quota": nodes * 4, "over_quota_weight": 2}}},
        {
            "name": "vision",
            "parent": "research",
            "resources": {"gpu": {"quota": nodes * 2, "over_quota_weight": 1}},
        },
        {
            "name": "nlp",
            "parent": "research",
            "resources": {"gpu": {"quota": nodes * 2, "over_quota_weight": 1}},
        },
        {"name": "serving", "priority": 200, "resources": {"gpu": {"quota": nodes * 2, "limit": nodes * 3}}},
        {"name": "notebooks", "resources": {"gpu": {"quota": 2, "over_quota_weight": 1}}},
    ]
    shapes = [
        (
            "train",
            "vision",
            lambda: {"count": rng.choice([2, 4]), "resources": {"gpu": 8, "cpu": 32, "memory": "256Gi"}},
        ),
        (
            "train",
            "nlp",
            lambda: {"count": rng.choice([2, 4, 8]), "resources": {"gpu": 4, "cpu": 16, "memory": "128Gi"}},
        ),
        (
            "serve",
            "serving",
            lambda: {"count": rng.choice([1, 2]), "resources": {"gpu": 1, "cpu": 8, "memory": "64Gi"}},
        ),
        (
            "nb",
            "notebooks",
            lambda: {"count": 1, "resources": {"gpu": rng.choice([0.25, 0.5]), "cpu": 4, "memory": "32Gi"}},
        ),
        ("tune", "vision", lambda: {"count": 1, "resources": {"gpu": 1, "cpu": 8, "memory": "64Gi"}}),
    ]
    job_list = []
    for i in range(jobs):
        kind, queue, pod = shapes[rng.randrange(len(shapes))]
        job: dict[str, Any] = {
            "name": f"{kind}-{i:03d}",
            "queue": queue,
            "submitted_at": float(i // 10) * 2.0,
            "duration": float(rng.choice([4, 6, 8, 12])),
            "pods": [pod()],
        }
        if kind == "serve":
            job["priority_class"] = "inference"
        elif kind == "nb":
            job["priority_class"] = "build"
        elif kind == "train" and rng.random() < 0.3:
            job["min_available"] = max(1, job["pods"][0]["count"] // 2)
        job_list.append(job)
    return {"name": "muster-demo", "nodes": fleet, "queues": queues, "jobs": job_list}
