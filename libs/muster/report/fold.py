"""The report as a fold over a log's events, in log order: a live stream, the archive, a saved log or a
simulation all read the same way.

Time is what the events say: a cycle's clock, a pod's ``at`` (bound, completed, failed), a lost node's
``at``; the clock never runs back (a pod handed over running reports its earlier start, which counts
for its run, not for the clock). Between two clocks the state holds, and the fold integrates it: GPUs
each queue holds, its quota, its fair share, what it borrows and lends (``muster.report.shares``).

A job is submitted at its ``submitted_at``, or when a pod of it is first bound if that is earlier (a
scenario's ``submitted_at`` only orders jobs: the simulator may start one before it). From its
submission until it ends its pods that are neither running nor ended wait, and a queue below its quota
with a waiting pod that asks for a GPU is counted as starved.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from muster import events as ev
from muster import mig
from muster.report.book import Integrals, ShareBook
from muster.report.model import ClusterFigures, QueueFigures, Report
from muster.report.shares import QueueTree
from muster.report.stats import jain_index, summarize

PROGRESS_EVERY = 10_000
"""Events between two calls of a fold's progress callback."""


def event_clock(event: ev.Event) -> float | None:
    """The time an event states, if it states one."""
    match event:
        case ev.CycleCompleted(clock=clock) | ev.PendingReasons(clock=clock):
            return clock
        case ev.PodBound(at=at) | ev.PodCompleted(at=at) | ev.PodFailed(at=at) | ev.NodeLost(at=at) if at:
            return at
    return None


@dataclass
class _Job:
    name: str
    queue: str
    submitted_at: float
    asks_gpu: list[bool]
    """Per pod index: whether it asks for a GPU (whole, a share, GPU memory or MIG instances)."""
    mig_gpus: list[int] = field(default_factory=list)
    """Per pod index: the GPUs its MIG instances count for (they hold no device index)."""
    arrived: bool = False
    deleted: bool = False
    first_bound: float | None = None
    ended: set[int] = field(default_factory=set)
    failed: bool = False
    ended_at: float | None = None
    first_nodes: set[str] = field(default_factory=set)
    first_run_over: bool = False
    evictions: int = 0
    evicted_gpu_seconds: float = 0.0
    idle: int = 0
    """Pods that ask for a GPU and neither run nor ended."""

    def __post_init__(self) -> None:
        self.idle = sum(self.asks_gpu)

    @property
    def counted(self) -> bool:
        """Whether its idle pods wait (it was submitted and not deleted)."""
        return self.arrived and not self.deleted

    @property
    def submitted(self) -> float:
        """Its submission, or its first bind when that came earlier."""
        if self.first_bound is None:
            return self.submitted_at
        return min(self.submitted_at, self.first_bound)

    @property
    def completed(self) -> bool:
        return self.ended_at is not None and not self.failed


@dataclass
class _Run:
    job: _Job
    gpus: float
    start: float


def _asks_gpu(spec: ev.PodSpec) -> bool:
    r = spec.resources
    return r.gpu > 0 or r.gpu_memory > 0 or mig.gpus(r.extended) > 0


class ReportFold:
    """Reads events one by one (``apply``); ``report()`` says what they add up to."""

    def __init__(self) -> None:
        self.now: float | None = None
        self.start: float | None = None
        self.specs: dict[str, ev.QueueSpec | None] = {}
        """Every queue seen, in the order first seen (None: a job names it, no spec does, or deleted)."""
        self.capacity_of: dict[str, float] = {}
        self.jobs: dict[str, _Job] = {}
        self.all_jobs: list[_Job] = []
        self.running: dict[tuple[str, int], _Run] = {}
        self.book = ShareBook()
        self.has_status = False
        self.pools: set[str] = set()
        self.unknown_binds = 0
        self.unstated_submissions = 0
        self._arrivals: list[tuple[float, int, _Job]] = []
        self._tiebreak = itertools.count()

    # -- time -----------------------------------------------------------------------------------

    def advance(self, t: float) -> None:
        """Move the clock to ``t`` (never back), letting jobs submitted by then arrive on the way."""
        if self.now is None:
            self.now = self.start = min([t, *(a for a, _, _ in self._arrivals)])
            self.book.move_to(self.now)
        while self._arrivals and self._arrivals[0][0] <= t:
            at, _, job = heapq.heappop(self._arrivals)
            self._move_to(at)
            self._arrive(job)
        self._move_to(t)

    def _move_to(self, t: float) -> None:
        assert self.now is not None
        if t > self.now:
            self.now = t
            self.book.move_to(t)

    def _queue_tree(self) -> QueueTree:
        rows = []
        for name, spec in self.specs.items():
            gpu = spec.resources.get("gpu") if spec is not None else None
            rows.append((name, spec.parent if spec else None, gpu.quota if gpu is not None else 0.0))
        return QueueTree.of(rows)

    # -- events ---------------------------------------------------------------------------------

    def apply(self, event: ev.Event) -> None:
        """Fold one event."""
        t = event_clock(event)
        if t is not None:
            self.advance(t)
        match event:
            # The events every pod brings come first: a match tries its cases in order.
            case ev.PodBound():
                self._bound(event)
            case ev.PodCompleted(job=job, pod=pod, at=at) | ev.PodFailed(job=job, pod=pod, at=at):
                self._stopped(job, pod, at or self._time(), failed=type(event) is ev.PodFailed)
            case ev.PodEvicted(job=job, pod=pod):
                self._stopped(job, pod, self._time(), evicted=True)
            case ev.CycleCompleted(pool=pool):
                self.pools.add(pool)
            case ev.PodGroupCreated():
                self._created(event)
            case ev.PodGroupDeleted(name=name):
                self._deleted(name)
            case ev.QueueStatus(name=name, fair_share=fair):
                self.has_status = True
                self._queue(name)
                self.book.set_fair_share(name, fair.get("gpu", 0.0))
            case ev.QueueUpserted(queue=spec):
                self._set_queue(spec.name, spec)
            case ev.QueueDeleted(name=name):
                self._set_queue(name, None)
            case ev.NodeRegistered(node=node) | ev.NodeUpdated(node=node):
                # MIG instances add their slices, as the allocator's total counts them (§17)
                self.capacity_of[node.name] = node.resources.gpu + mig.gpus(node.resources.extended)
                self.book.set_capacity(sum(self.capacity_of.values()))
            case ev.NodeRemoved(name=name):
                self.capacity_of.pop(name, None)
                self.book.set_capacity(sum(self.capacity_of.values()))

    def _time(self) -> float:
        """The clock, for an event that states no time of its own."""
        return self.now if self.now is not None else 0.0

    def _queue(self, name: str) -> None:
        if name not in self.specs:
            self._set_queue(name, None)

    def _set_queue(self, name: str, spec: ev.QueueSpec | None) -> None:
        self.specs[name] = spec
        self.book.set_queues(self._queue_tree())

    def _created(self, event: ev.PodGroupCreated) -> None:
        known = self.jobs.get(event.name)
        if known is not None and not known.deleted:
            return  # a redelivered creation: the allocator ignores it too
        self._queue(event.queue)
        submitted = event.submitted_at
        if submitted <= 0 and self.now is not None and self.now > 0:
            # An emitter that left submitted_at unset, in a log whose clock runs: submitted when created.
            submitted = self.now
            self.unstated_submissions += 1
        job = _Job(
            event.name,
            event.queue,
            submitted,
            [_asks_gpu(spec) for spec in event.pods for _ in range(spec.count)],
            [mig.gpus(spec.resources.extended) for spec in event.pods for _ in range(spec.count)],
        )
        self.jobs[job.name] = job
        self.all_jobs.append(job)
        if self.now is not None and job.submitted_at <= self.now:
            self._arrive(job)
        else:
            heapq.heappush(self._arrivals, (job.submitted_at, next(self._tiebreak), job))

    def _arrive(self, job: _Job) -> None:
        if job.arrived:
            return
        job.arrived = True
        self._waiting(job, job.idle)

    def _waiting(self, job: _Job, delta: int) -> None:
        """``delta`` more of ``job``'s pods wait, if its pods count as waiting."""
        if delta and job.counted:
            self.book.add_waiting(job.queue, delta)

    def _idle(self, job: _Job, pod: int, delta: int) -> None:
        if job.asks_gpu[pod]:
            job.idle += delta
            self._waiting(job, delta)

    def _deleted(self, name: str) -> None:
        job = self.jobs.get(name)
        if job is None or job.deleted:
            return
        self._waiting(job, -job.idle)
        job.deleted = True

    def _bound(self, event: ev.PodBound) -> None:
        job = self.jobs.get(event.job)
        key = (event.job, event.pod)
        if job is None or not 0 <= event.pod < len(job.asks_gpu):
            self.unknown_binds += 1
            return
        if key in self.running:
            return
        at = event.at or self._time()
        if job.first_bound is None:
            job.first_bound = at
        self._arrive(job)
        self._idle(job, event.pod, -1)
        if not job.first_run_over:
            job.first_nodes.add(event.node)
        gpus = event.gpu_share if event.gpu_share > 0 else float(len(event.gpus))
        gpus += job.mig_gpus[event.pod] if event.pod < len(job.mig_gpus) else 0
        self.running[key] = _Run(job, gpus, at)
        self.book.add_used(job.queue, gpus)

    def _stopped(
        self, name: str, pod: int, at: float, *, evicted: bool = False, failed: bool = False
    ) -> None:
        run = self.running.pop((name, pod), None)
        if run is None:
            return  # not running: an eviction answered for a pod whose bind never landed
        job = run.job
        self.book.add_used(job.queue, -run.gpus)
        job.first_run_over = True
        if evicted:
            self._idle(job, pod, +1)  # it waits again
            if not job.deleted:
                job.evictions += 1
                job.evicted_gpu_seconds += max(0.0, at - run.start) * run.gpus
        else:
            job.ended.add(pod)
            job.failed = job.failed or failed
            if len(job.ended) == len(job.asks_gpu):
                job.ended_at = at

    # -- the result -----------------------------------------------------------------------------

    def report(self) -> Report:
        """What the events folded so far add up to."""
        start = self.start if self.start is not None else 0.0
        end = self.now if self.now is not None else start
        self.book.close()
        tree = self.book.tree
        fair = self.has_status
        queues = {name: self._queue_figures(tree, name, fair) for name in tree.order}
        leaves = [q for name, q in queues.items() if tree.is_leaf(name)]
        cluster = ClusterFigures(
            jobs=len(self.all_jobs),
            started=sum(1 for j in self.all_jobs if j.first_bound is not None),
            completed=sum(1 for j in self.all_jobs if j.completed),
            failed=sum(1 for j in self.all_jobs if j.failed and j.ended_at is not None),
            gpus=sum(self.capacity_of.values()),
            used_gpu_seconds=self.book.used_seconds,
            available_gpu_seconds=self.book.available_seconds,
            makespan=self._makespan(),
            jain_index=jain_index([r for q in leaves if (r := q.used_to_deserved()) is not None]),
            wait=summarize([j.first_bound - j.submitted for j in self.all_jobs if j.first_bound is not None]),
            completion=summarize([j.ended_at - j.submitted for j in self.all_jobs if j.completed]),
            evictions=sum(j.evictions for j in self.all_jobs),
            evicted_gpu_seconds=sum(j.evicted_gpu_seconds for j in self.all_jobs),
            below_quota_seconds=sum(q.below_quota_seconds for q in leaves),
            borrowed_gpu_seconds=sum(q.borrowed_gpu_seconds for q in queues.values() if q.parent is None),
        )
        return Report(
            start=start,
            end=end,
            deserved_from="fair_share" if fair else "quota",
            queues=queues,
            depth={name: tree.depth(name) for name in tree.order},
            cluster=cluster,
            timeline=self.book.timeline,
            notes=self._notes(),
        )

    def _subtree_jobs(self, tree: QueueTree, name: str) -> list[_Job]:
        names, stack = set(), [name]
        while stack:
            q = stack.pop()
            names.add(q)
            stack.extend(tree.children.get(q, ()))
        return [j for j in self.all_jobs if j.queue in names]

    def _queue_figures(self, tree: QueueTree, name: str, fair: bool) -> QueueFigures:
        jobs = self._subtree_jobs(tree, name)
        started = [j for j in jobs if j.first_bound is not None]
        waits = [j.first_bound - j.submitted for j in started]
        acc = self.book.integrals.get(name, Integrals())
        return QueueFigures(
            name=name,
            parent=tree.parent[name],
            jobs=len(jobs),
            started=len(started),
            completed=sum(1 for j in jobs if j.completed),
            failed=sum(1 for j in jobs if j.failed and j.ended_at is not None),
            wait=summarize(waits),
            completion=summarize([j.ended_at - j.submitted for j in jobs if j.completed]),
            waits=sorted(waits),
            multi_node_wait=summarize(
                [j.first_bound - j.submitted for j in started if len(j.first_nodes) > 1]
            ),
            used_gpu_seconds=acc.used,
            fair_share_gpu_seconds=acc.fair_share if fair else None,
            quota_gpu_seconds=acc.quota,
            below_quota_seconds=acc.below_quota,
            borrowed_gpu_seconds=acc.borrowed,
            lent_gpu_seconds=acc.lent,
            evictions=sum(j.evictions for j in jobs),
            evicted_gpu_seconds=sum(j.evicted_gpu_seconds for j in jobs),
        )

    def _makespan(self) -> float | None:
        kept = [j for j in self.all_jobs if not j.deleted]
        if not kept or any(j.ended_at is None for j in kept):
            return None
        return max(j.ended_at for j in kept) - min(j.submitted for j in kept)

    def _notes(self) -> list[str]:
        notes = []
        if not self.has_status:
            notes.append(
                "the log carries no QueueStatus: each queue's deserved share is its GPU quota, from the "
                "queue specs, not the allocator's fair share"
            )
        elif len(self.pools) > 1:
            notes.append(
                f"{len(self.pools)} pools: a QueueStatus does not say which pool it counts, so a queue's fair "
                "share is the last one any pool published"
            )
        if self.unstated_submissions:
            notes.append(
                f"{self.unstated_submissions} jobs state no submission time: each counts as submitted when "
                "the log created it"
            )
        if self.unknown_binds:
            notes.append(f"{self.unknown_binds} pods bound of jobs the log does not create (left out)")
        return notes


def build_report(events: Iterable[ev.Event], progress: Callable[[int], None] | None = None) -> Report:
    """The report of ``events`` in log order; ``progress(n)`` is called every PROGRESS_EVERY events."""
    fold = ReportFold()
    for n, event in enumerate(events, 1):
        fold.apply(event)
        if progress is not None and n % PROGRESS_EVERY == 0:
            progress(n)
    return fold.report()
