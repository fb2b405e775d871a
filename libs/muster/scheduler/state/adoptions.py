"""Pods handed to the fleet already running (``AdoptPods``), until the fleet answers for each.

Such a pod stays PENDING until then: ``PodBound`` binds it where it runs, from when it started, with no
decision before it; ``BindFailed`` leaves it pending. Until then it is listed in ``awaiting`` (once its
group is known), and the live allocator decides nothing: a cycle could otherwise place it a second time.
"""

from __future__ import annotations

from typing import ClassVar

import msgspec

from muster import events as ev

from .pods import PENDING, Job


class AdoptionImage(msgspec.Struct, array_like=True):
    job: str
    submission: str
    pods: list[int]


class AdoptionsImage(msgspec.Struct, kw_only=True):
    adoptions: list[AdoptionImage]
    awaiting_adoption: list[tuple[str, int]]


class Adoptions:
    """Pods to adopt, by the group they belong to until it is known, then by job and pod."""

    CACHES: ClassVar[frozenset[str]] = frozenset()
    IMAGED_AS: ClassVar[dict[str, tuple[str, ...]]] = {
        "by_group": ("adoptions",),
        "awaiting": ("awaiting_adoption",),
    }

    def __init__(self) -> None:
        self.by_group: dict[tuple[str, str], set[int]] = {}
        """(job, submission) -> pods handed to the fleet already running, whose group is not known yet."""
        self.awaiting: set[tuple[str, int]] = set()
        """Pending pods of known jobs handed to the fleet already running, which it has not answered yet."""

    def adopt(self, event: ev.AdoptPods, jobs: dict[str, Job]) -> None:
        """Note the pods the fleet is to report: at once for a known group, else once it is created."""
        for pod in event.pods:
            job = jobs.get(pod.job)
            if job is not None and job.workload_uid == event.workload_uid:
                self._await(job, pod.pod)
            else:
                self.by_group.setdefault((pod.job, event.workload_uid), set()).add(pod.pod)

    def created(self, job: Job) -> None:
        """``job``'s group is known now: its pods handed over before are awaited."""
        if self.by_group:
            for i in sorted(self.by_group.pop((job.name, job.workload_uid), ())):
                self._await(job, i)

    def answered(self, job: str, pod: int) -> None:
        """The fleet answered for the pod (bound or failed)."""
        if self.awaiting:
            self.awaiting.discard((job, pod))

    def forget(self, job: str) -> None:
        """The job is gone: none of its pods is awaited."""
        if self.awaiting:
            self.awaiting = {key for key in self.awaiting if key[0] != job}

    def _await(self, job: Job, i: int) -> None:
        # The fleet answers every pod it does not run yet; a pod that is not pending is not its to adopt.
        if 0 <= i < len(job.pods) and job.state[i] == PENDING:
            self.awaiting.add((job.name, i))

    def image(self) -> AdoptionsImage:
        return AdoptionsImage(
            adoptions=[AdoptionImage(job, sub, sorted(pods)) for (job, sub), pods in self.by_group.items()],
            awaiting_adoption=sorted(self.awaiting),
        )

    @classmethod
    def restore(cls, image: AdoptionsImage) -> Adoptions:
        adoptions = cls()
        adoptions.by_group = {(a.job, a.submission): set(a.pods) for a in image.adoptions}
        adoptions.awaiting = {(job, pod) for job, pod in image.awaiting_adoption}
        return adoptions
