"""The pod ledger: every job the state knows, its pods and where each runs, and the sets a cycle starts
from (jobs with pending pods, jobs running, gangs running below their minimum)."""

from __future__ import annotations

from typing import ClassVar

import msgspec

from muster import events as ev
from muster.kernels import placement as pl

from .pods import ACTIVE, ALLOCATED, COMPLETED, HOLDING, PENDING, RELEASING, Job, PodReq, is_stale, pod_req

REQUESTS_REMEMBERED = 4096
"""Distinct pod-spec lists whose requests a ledger keeps parsed (forgotten all at once beyond)."""
_encode = msgspec.json.Encoder().encode


class ShapeImage(msgspec.Struct, array_like=True):
    pool: str
    pods: list[PodReq]
    id: int


class LedgerImage(msgspec.Struct, kw_only=True):
    finished: list[str]
    jobs: dict[str, Job]
    pending_jobs: list[str]
    running_jobs: list[str]
    stale_candidates: list[str]
    stale_since: dict[str, float]
    shapes: list[ShapeImage]
    evicted_unclocked: list[str]
    preemption_delay_used: bool


class PodLedger:
    """Jobs by name, with their pods' states and the sets kept in step with them."""

    CACHES: ClassVar[frozenset[str]] = frozenset(
        {
            "_pending_sorted",
            "_pending_added",
            "_pending_removed",
            "_requests_of",
            "_shape_of",
            "pod_affinity_jobs",
        }
    )
    IMAGED_AS: ClassVar[dict[str, tuple[str, ...]]] = {}

    def __init__(self) -> None:
        self.jobs: dict[str, Job] = {}
        self.finished: set[str] = set()
        """Names of jobs forgotten once finished (``forget_finished``): a PodGroupCreated of one creates nothing."""
        self.pending_jobs: set[str] = set()
        self.running_jobs: set[str] = set()
        """Jobs with a pod binding or bound."""
        self.stale_candidates: set[str] = set()
        """Jobs with active pods but fewer than min_available of them (sub-groups checked later)."""
        self.stale_since: dict[str, float] = {}
        """When each stale gang was first seen so, by the clock of the CycleCompleted that saw it."""
        self.shapes: dict[tuple[str, tuple[PodReq, ...]], int] = {}
        self.evicted_unclocked: set[str] = set()
        """Jobs reclaim, preempt or consolidate evicted a pod of since the last CycleCompleted, whose clock
        becomes their ``last_evicted_at`` (an eviction comes before the CycleCompleted of its cycle)."""
        self.preemption_delay_used = False
        """Whether some job ever had a preemption delay: only then can time alone end one."""
        """(pool, pod requests) -> id, numbered in order of first appearance in the log (see ``Job.shape``)."""
        self._pending_sorted: list[str] = []
        self._pending_added: list[str] = []
        self._pending_removed = False
        # Most jobs repeat a few pod specs: their requests (and shape ids) are read once per distinct
        # spec list, keyed by its JSON, instead of parsed and hashed again for every job.
        self._requests_of: dict[bytes, tuple[tuple[PodReq, ...], bool]] = {}
        self._shape_of: dict[tuple[str, bytes], int] = {}
        self.pod_affinity_jobs: set[str] = set()
        """Jobs a pod of which has pod affinity or anti-affinity terms (rebuilt from the jobs on restore):
        while there are none, no pod's placement depends on another's."""

    # -- jobs arriving and leaving ----------------------------------------------------------------

    def is_new(self, name: str) -> bool:
        """Whether a job of that name is neither known nor forgotten once finished."""
        return name not in self.jobs and name not in self.finished

    def create(self, e: ev.PodGroupCreated) -> Job:
        """Record the job ``e`` creates, every pod pending (its queue's sums are the caller's)."""
        key, requests, plain = self._pod_requests(e.pods, e.runtime)
        pods = list(requests)
        n = len(pods)
        job = Job(
            name=e.name,
            queue=e.queue,
            pool=e.pool,
            priority=e.priority,
            preemptible=e.preemptible,
            min_available=max(0, min(e.min_available, n)),
            submitted_at=e.submitted_at,
            pods=pods,
            subgroups=tuple(e.subgroups),
            min_subgroup=e.min_subgroup if e.subgroups else None,
            topology=e.topology,
            min_runtime=e.min_runtime,
            stale_gang_grace=e.stale_gang_grace,
            preemption_delay=e.preemption_delay,
            state=[PENDING] * n,
            node=[-1] * n,
            gpus=[()] * n,
            share=[0.0] * n,
            acct=[(0.0, 0, 0)] * n,
            bound_at=[0.0] * n,
            workload_uid=e.workload_uid,
            n_pending=n,
        )
        if n and plain and not job.subgroups and job.topology is None and max(job.min_available, 1) >= n:
            job.shape = self._shape(job.pool, key, requests)
        self.jobs[e.name] = job
        if _has_pod_affinity(job):
            self.pod_affinity_jobs.add(job.name)
        self.preemption_delay_used = self.preemption_delay_used or bool(e.preemption_delay)
        if n and job.name not in self.pending_jobs:
            self.pending_jobs.add(job.name)
            self._pending_added.append(job.name)
        self.stale_candidates.discard(job.name)
        self.stale_since.pop(job.name, None)
        return job

    def remove(self, name: str) -> None:
        """Forget a job whose pods are no longer counted anywhere."""
        del self.jobs[name]
        self.pod_affinity_jobs.discard(name)
        if name in self.pending_jobs:
            self.pending_jobs.discard(name)
            self._pending_removed = True
        self.stale_candidates.discard(name)
        self.stale_since.pop(name, None)
        self.evicted_unclocked.discard(name)

    def _pod_requests(self, specs: list[ev.PodSpec], runtime: str) -> tuple[bytes, tuple[PodReq, ...], bool]:
        """(key, every pod's request, whether they may share a shape) of a job's pod specs, in a group of
        ``runtime``."""
        # A runtime holds no '[', which starts the specs' JSON: the key is one list in one runtime.
        key = runtime.encode() + _encode(specs)
        hit = self._requests_of.get(key)
        if hit is None:
            pods: list[PodReq] = []
            for si, spec in enumerate(specs):
                pods.extend([pod_req(spec, f"pods[{si}]", runtime)] * max(0, spec.count))
            if len(self._requests_of) >= REQUESTS_REMEMBERED:
                self._requests_of.clear()
                self._shape_of.clear()
            # a pod with pod (anti-)affinity is placed one at a time, in Python (``PodAffinityView``)
            plain = all(p.kind != pl.MEMORY and p.invalid is None and not p.has_pod_affinity for p in pods)
            hit = self._requests_of[key] = (tuple(pods), plain)
        return key, hit[0], hit[1]

    def _shape(self, pool: str, key: bytes, requests: tuple[PodReq, ...]) -> int:
        shape = self._shape_of.get((pool, key))
        if shape is None:
            shape = self.shapes.setdefault((pool, requests), len(self.shapes))
            self._shape_of[(pool, key)] = shape
        return shape

    # -- pods changing state ----------------------------------------------------------------------

    def count(self, job: Job, state: int, sign: int) -> None:
        """Count a pod of ``job`` in ``state`` into (sign 1) or out of (sign -1) the job's counters."""
        if state in ALLOCATED:
            job.n_running += sign
            if job.n_running == 0:
                self.running_jobs.discard(job.name)
            elif sign > 0 and job.n_running == 1:
                self.running_jobs.add(job.name)
        elif state == PENDING:
            job.n_pending += sign
        elif state == COMPLETED:
            job.n_completed += sign
        if state in ACTIVE:
            job.n_active += sign

    def track(self, job: Job) -> None:
        """Keep the pending and stale-candidate sets in step with the job's counters."""
        if job.n_pending > 0:
            if job.name not in self.pending_jobs:
                self.pending_jobs.add(job.name)
                self._pending_added.append(job.name)
        elif job.name in self.pending_jobs:
            self.pending_jobs.discard(job.name)
            self._pending_removed = True
        if job.n_active > 0 and (job.n_active < job.min_available or job.subgroups):
            self.stale_candidates.add(job.name)
        else:
            self.stale_candidates.discard(job.name)
            self.stale_since.pop(job.name, None)

    def detach(self, slot: int) -> None:
        """Pods recorded on the node that had ``slot`` keep their state (their own events free them), but
        no longer point at the slot, which the next node registered may take."""
        for job in self.jobs.values():
            for i, s in enumerate(job.node):
                if s == slot and job.state[i] in (*HOLDING, RELEASING):
                    job.node[i] = -1

    def note_evictions(self, clock: float) -> None:
        """Stamp the jobs evicted since the last cycle record with that cycle's ``clock``."""
        for name in sorted(self.evicted_unclocked):
            self.jobs[name].last_evicted_at = clock
        self.evicted_unclocked.clear()

    def note_stale(self, clock: float) -> None:
        """Time the grace of every gang seen stale at ``clock`` for the first time; forget recovered ones."""
        for name in sorted(self.stale_candidates):
            if not is_stale(self.jobs[name]):
                self.stale_since.pop(name, None)
            elif name not in self.stale_since:
                self.stale_since[name] = clock

    # -- views used by cycles -------------------------------------------------------------------

    def sorted_pending(self) -> list[str]:
        """Names of the jobs with pending pods, sorted; do not modify. Kept between calls and merged with
        what changed since, as sorting 100k names from a set costs more than the merge."""
        if self._pending_added or self._pending_removed:
            pending = self.pending_jobs
            added = {n for n in self._pending_added if n in pending}
            keep = self._pending_sorted
            if self._pending_removed or added:
                keep = [n for n in keep if n in pending and n not in added]
            keep.extend(sorted(added))
            keep.sort()  # two sorted runs: a linear merge
            self._pending_sorted = keep
            self._pending_added = []
            self._pending_removed = False
        return self._pending_sorted

    # -- snapshots ------------------------------------------------------------------------------

    def image(self) -> LedgerImage:
        """The ledger as a snapshot holds it: sets sorted, caches left out."""
        return LedgerImage(
            finished=sorted(self.finished),
            jobs=self.jobs,
            pending_jobs=sorted(self.pending_jobs),
            running_jobs=sorted(self.running_jobs),
            stale_candidates=sorted(self.stale_candidates),
            stale_since=self.stale_since,
            shapes=[ShapeImage(pool, list(pods), id) for (pool, pods), id in self.shapes.items()],
            evicted_unclocked=sorted(self.evicted_unclocked),
            preemption_delay_used=self.preemption_delay_used,
        )

    @classmethod
    def restore(cls, image: LedgerImage) -> PodLedger:
        ledger = cls()
        ledger.finished = set(image.finished)
        ledger.jobs = _shared_requests(image.jobs)
        ledger.pending_jobs = set(image.pending_jobs)
        # The sorted view of pending jobs is rebuilt on first use from everything pending.
        ledger._pending_added = list(image.pending_jobs)
        ledger.running_jobs = set(image.running_jobs)
        ledger.stale_candidates = set(image.stale_candidates)
        ledger.stale_since = image.stale_since
        ledger.shapes = {(s.pool, tuple(s.pods)): s.id for s in image.shapes}
        ledger.evicted_unclocked = set(image.evicted_unclocked)
        ledger.preemption_delay_used = image.preemption_delay_used
        ledger.pod_affinity_jobs = {name for name, job in ledger.jobs.items() if _has_pod_affinity(job)}
        return ledger


def _has_pod_affinity(job: Job) -> bool:
    return any(p.has_pod_affinity for p in job.pods)


def _shared_requests(jobs: dict[str, Job]) -> dict[str, Job]:
    """Jobs whose equal pod requests are one object again, as the ledger shares them (most jobs repeat
    a few pod specs: a hundred thousand copies would cost memory, and nothing else)."""
    seen: dict[PodReq, PodReq] = {}
    for job in jobs.values():
        job.pods = [seen.setdefault(req, req) for req in job.pods]
    return jobs
