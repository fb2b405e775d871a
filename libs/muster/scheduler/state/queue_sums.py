"""Per-queue running sums of what its pods hold and ask for, kept up to date on every pod transition, so
a cycle reads them instead of walking every pod."""

from __future__ import annotations

from typing import ClassVar

import msgspec

from muster.kernels import placement as pl

from .pods import HOLDING, PENDING, Job

# columns of a queue's running sums: allocated, of that non-preemptible, requested (pending pods)
A_GPU, A_CPU, A_MEM, NP_GPU, NP_CPU, NP_MEM, R_GPU, R_CPU, R_MEM, R_GPU_MEM, R_PODS = range(11)
SUM_COLS = 11


class QueueSumsImage(msgspec.Struct, kw_only=True):
    queue_sums: dict[str, list[float]]


class QueueSums:
    """Each queue's sums (``SUM_COLS`` columns) by name, in the order the log first counted a pod of it."""

    CACHES: ClassVar[frozenset[str]] = frozenset()
    IMAGED_AS: ClassVar[dict[str, tuple[str, ...]]] = {"by_queue": ("queue_sums",)}

    def __init__(self) -> None:
        self.by_queue: dict[str, list[float]] = {}

    def count(self, job: Job, i: int, state: int, sign: int) -> None:
        """Count pod i of ``job``, in ``state``, into (sign 1) or out of (sign -1) its queue's sums."""
        s = self.by_queue.get(job.queue)
        if s is None:
            s = self.by_queue[job.queue] = [0.0] * SUM_COLS
        if state in HOLDING:
            # A pipelined pod is its queue's already: a cycle charges it when it decides it, so one that
            # runs before the binder confirms must count it too, or the queue looks short by that much
            # and reclaims more than its fair share.
            gpu, cpu, mem = job.acct[i]
            s[A_GPU] += sign * gpu
            s[A_CPU] += sign * cpu
            s[A_MEM] += sign * mem
            if not job.preemptible:
                s[NP_GPU] += sign * gpu
                s[NP_CPU] += sign * cpu
                s[NP_MEM] += sign * mem
        elif state == PENDING:
            req = job.pods[i]
            s[R_GPU] += sign * (0.0 if req.kind == pl.MEMORY else req.gpu)
            s[R_GPU_MEM] += sign * (req.gpu_memory if req.kind == pl.MEMORY else 0)
            s[R_CPU] += sign * req.cpu
            s[R_MEM] += sign * req.memory
            s[R_PODS] += sign

    def image(self) -> QueueSumsImage:
        return QueueSumsImage(queue_sums=self.by_queue)

    @classmethod
    def restore(cls, image: QueueSumsImage) -> QueueSums:
        sums = cls()
        sums.by_queue = image.queue_sums
        return sums
