"""Builders for hand-made logs: a report test reads as the history it tells."""

from __future__ import annotations

from muster import events as ev


def node(name: str, gpu: float) -> ev.NodeRegistered:
    return ev.NodeRegistered(node=ev.NodeSpec(name=name, resources=ev.Resources(gpu=gpu)))


def queue(name: str, quota: float, parent: str | None = None) -> ev.QueueUpserted:
    return ev.QueueUpserted(
        queue=ev.QueueSpec(name=name, parent=parent, resources={"gpu": ev.QueueResource(quota=quota)})
    )


def job(name: str, queue: str, submitted: float, pods: int = 1, gpu: float = 1) -> ev.PodGroupCreated:
    return ev.PodGroupCreated(
        name=name,
        queue=queue,
        submitted_at=submitted,
        min_available=pods,
        pods=[ev.PodSpec(count=pods, resources=ev.Resources(gpu=gpu))],
    )


def clock(t: float) -> ev.CycleCompleted:
    """A cycle at ``t``: what moves time on in a log."""
    return ev.CycleCompleted(cycle=1, watermark=0, clock=t)


def bound(job: str, pod: int, at: float, node: str = "n1", gpus: int = 1) -> ev.PodBound:
    return ev.PodBound(job=job, pod=pod, node=node, gpus=list(range(gpus)), at=at)


def completed(job: str, pod: int, at: float) -> ev.PodCompleted:
    return ev.PodCompleted(job=job, pod=pod, node="n1", at=at)


def evicted(job: str, pod: int) -> ev.PodEvicted:
    return ev.PodEvicted(job=job, pod=pod, node="n1")


def fair_share(name: str, gpu: float) -> ev.QueueStatus:
    return ev.QueueStatus(name=name, fair_share={"gpu": gpu})
