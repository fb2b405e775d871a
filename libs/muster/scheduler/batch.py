"""KAI's queue order in one kernel: the allocate loop without Python per job, and the walk of later actions.

``allocate`` gives the same decisions, reasons and working state as the
reference loop in ``tests/unit/allocator/reference.py``, and ``visit`` the
same walk as ``actions.common.walk_in_order`` (tests compare each with its
reference). The kernel keeps ``JobQueue``'s heaps as
arrays and replays CPython's heapq step for step on the queue heaps, whose
order (``_Entry.__lt__``) is not guaranteed transitive, so even ties
resolve as the reference resolves them. Job heaps hold a strict total
order, so any heap gives the same pops.

A *plain* job (``Job.shape >= 0``, untouched so far this session) is tried
whole inside the kernel: limits and quotas, the failed-shape cache, then
placement with the same jitted steps ``placement.place`` uses. Any other
job, and the first failure of each shape (whose reason reads the nodes),
goes back to Python: the kernel returns, the caller handles the job with
the reference code and resumes the kernel, which then finishes that pop.

The placement kernels and the rules this module compiles in (``capacity``,
``ordering``, ``gang``, ``muster.tolerances``) are part of the digest that
names the kernel cache (``muster.kernels.jit``), so a change to any of them
recompiles this module too.

``visit`` pops jobs ahead in batches at the current shares and hands them
to Python in order; when a try changes the shares, the rest of the batch
is stale, so the heaps are restored and re-popped up to that job.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from muster.events import BindRequested
from muster.kernels import placement as pl
from muster.kernels.jit import njit
from muster.kernels.placement import (
    _apply,
    _indexed_best_fraction,
    _indexed_best_whole,
    _refile,
    _request,
    _scan_best,
    _unapply,
)

from .capacity import first_exceeded, over_limit_text, over_quota_text
from .gang import elastic_state, pipelines_whole_gang
from .ordering import job_order, queue_key, smaller_share
from .policy_placement import is_policy
from .session import Session
from .state import Job

# what the kernel returns
FINISHED, PYTHON_JOB, FIRST_NO_FIT = range(3)
# what a record says about a plain job's attempt
PLACED, OVER_LIMIT, OVER_QUOTA, SHAPE_FAILED = range(4)
# slots of the control array
C_RECORDS, C_PLACED, C_JOB, C_COUNT, C_RESUME, C_AGAIN, C_PATH, C_DIRTY = range(8)


class Tree(NamedTuple):
    """The queue tree, queue order's inputs and the heaps of queue entries (one segment per parent + root)."""

    parent: np.ndarray  # int64[Q]
    neg_priority: np.ndarray  # int64[Q]
    quota: np.ndarray  # float64[Q, 3]
    limit: np.ndarray  # float64[Q, 3]
    fair: np.ndarray  # float64[Q, 3]
    allocatable: np.ndarray  # float64[Q, 3], -1 = unlimited
    cap: np.ndarray  # float64[Q, 3], unlimited = inf
    total: np.ndarray  # float64[3]
    anc_start: np.ndarray  # int64[Q + 1]
    anc: np.ndarray  # int64[...]: each queue, then up to its top-level queue
    alloc: np.ndarray  # float64[Q, 3], working copy of Session.alloc
    alloc_np: np.ndarray  # float64[Q, 3]
    dirty: np.ndarray  # bool[Q]: alloc changed since the caller last read it
    dirty_list: np.ndarray  # int64[Q]
    seg_start: np.ndarray  # int64[Q + 2]: heap of children of p at seg_start[p], root's at seg_start[Q]
    seg_len: np.ndarray  # int64[Q + 1]
    heap: np.ndarray  # int64[...]: queue ids
    key_b: np.ndarray  # int64[Q, 4]: over-utilised, beyond deserved, -priority, zero share
    key_f: np.ndarray  # float64[Q, 2]: dominant share with the head job, without
    head: np.ndarray  # int64[Q]: head job of the queue's entry
    has_jobs: np.ndarray  # bool[Q]: a leaf with a job heap
    job_start: np.ndarray  # int64[Q]
    job_len: np.ndarray  # int64[Q]
    job_heap: np.ndarray  # int64[J]
    path: np.ndarray  # int64[depth + 1]


class Jobs(NamedTuple):
    """Per job (index = name order within a leaf): job order's key, request, and what a plain job places."""

    neg_priority: np.ndarray  # int64[J]
    elastic: np.ndarray  # int64[J]
    submitted: np.ndarray  # float64[J]
    req: np.ndarray  # float64[J, 3]
    leaf: np.ndarray  # int64[J]
    shape: np.ndarray  # int64[J]: index into Shapes, -1 = handled in Python
    preemptible: np.ndarray  # bool[J]
    min_available: np.ndarray  # int64[J]
    skip: np.ndarray  # bool[J]: nothing to place, popped and passed over


class Shapes(NamedTuple):
    """Pod rows of each plain shape (``PodArrays`` concatenated), and which shapes already found no room."""

    start: np.ndarray  # int64[S + 1]
    pods: pl.PodArrays
    gpu: np.ndarray  # float64[rows]: queue accounting of each row
    failed: np.ndarray  # bool[S]


class Out(NamedTuple):
    """Records of plain jobs' attempts, in order, and their pods' placements."""

    job: np.ndarray  # int64[J]
    code: np.ndarray  # int64[J]
    queue: np.ndarray  # int64[J]
    res: np.ndarray  # int64[J]
    value: np.ndarray  # float64[J]
    node: np.ndarray  # int64[P]
    devices: np.ndarray  # int64[P, G]
    share: np.ndarray  # float64[P]
    pipelined: np.ndarray  # bool[P]


# -- queue order ---------------------------------------------------------------------------------


@njit(cache=True, inline="always")
def _set_key(t, q, req):
    """``queue_key`` of queue q about to run a job needing ``req``, into the key arrays."""
    key = queue_key(t.alloc[q], t.fair[q], t.quota[q], t.allocatable[q], t.total, t.neg_priority[q], req)
    t.key_b[q, 0] = key[0]
    t.key_b[q, 1] = key[1]
    t.key_b[q, 2] = key[2]
    t.key_b[q, 3] = key[3]
    t.key_f[q, 0] = key[4]
    t.key_f[q, 1] = key[5]


@njit(cache=True, inline="always")
def _entry_lt(t, a, b):
    """``_Entry.__lt__``: key, then the smaller allocatable share, then creation order."""
    for i in range(4):
        if t.key_b[a, i] != t.key_b[b, i]:
            return t.key_b[a, i] < t.key_b[b, i]
    for i in range(2):
        if t.key_f[a, i] != t.key_f[b, i]:
            return t.key_f[a, i] < t.key_f[b, i]
    smaller = smaller_share(t.cap[a], t.cap[b])
    if smaller != 0:
        return smaller > 0
    return a < b


@njit(cache=True, inline="always")
def _q_siftdown(t, base, startpos, pos):
    heap = t.heap
    newitem = heap[base + pos]
    while pos > startpos:
        parentpos = (pos - 1) >> 1
        parent = heap[base + parentpos]
        if _entry_lt(t, newitem, parent):
            heap[base + pos] = parent
            pos = parentpos
            continue
        break
    heap[base + pos] = newitem


@njit(cache=True, inline="always")
def _q_siftup(t, base, n, pos):
    heap = t.heap
    startpos = pos
    newitem = heap[base + pos]
    childpos = 2 * pos + 1
    while childpos < n:
        rightpos = childpos + 1
        if rightpos < n and not _entry_lt(t, heap[base + childpos], heap[base + rightpos]):
            childpos = rightpos
        heap[base + pos] = heap[base + childpos]
        pos = childpos
        childpos = 2 * pos + 1
    heap[base + pos] = newitem
    _q_siftdown(t, base, startpos, pos)


@njit(cache=True, inline="always")
def _job_lt(jobs, a, b):
    """``job_order`` between jobs a and b (indices in name order within a leaf break ties as names do)."""
    return job_order(jobs.neg_priority[a], jobs.elastic[a], jobs.submitted[a], a) < job_order(
        jobs.neg_priority[b], jobs.elastic[b], jobs.submitted[b], b
    )


@njit(cache=True, inline="always")
def _job_pop(t, jobs, q):
    base = t.job_start[q]
    n = t.job_len[q] - 1
    heap = t.job_heap
    top = heap[base]
    t.job_len[q] = n
    if n == 0:
        return top
    _job_sift(heap, jobs, base, n, 0, heap[base + n])
    return top


@njit(cache=True, inline="always")
def _job_sift(heap, jobs, base, n, pos, item):
    """Put ``item`` at ``pos`` of the n-long job heap at ``base`` and sift it down to its place."""
    child = 2 * pos + 1
    while child < n:
        right = child + 1
        if right < n and _job_lt(jobs, heap[base + right], heap[base + child]):
            child = right
        if not _job_lt(jobs, heap[base + child], item):
            break
        heap[base + pos] = heap[base + child]
        pos = child
        child = 2 * pos + 1
    heap[base + pos] = item


@njit(cache=True, inline="always")
def _job_push(t, jobs, q, j):
    base = t.job_start[q]
    pos = t.job_len[q]
    t.job_len[q] = pos + 1
    heap = t.job_heap
    while pos > 0:
        parent = (pos - 1) >> 1
        if _job_lt(jobs, j, heap[base + parent]):
            heap[base + pos] = heap[base + parent]
            pos = parent
        else:
            break
    heap[base + pos] = j


@njit(cache=True, inline="always")
def _head(t, q):
    if t.has_jobs[q]:
        return t.job_heap[t.job_start[q]] if t.job_len[q] > 0 else -1
    base = t.seg_start[q]
    return t.head[t.heap[base]] if t.seg_len[q] > 0 else -1


@njit(cache=True)
def _build(t, jobs, order):
    """``JobQueue.__init__``: each leaf's jobs heapified, entries appended in ``order`` (deepest first),
    then every queue heap heapified."""
    nq = t.parent.shape[0]
    for q in range(nq):
        base, n = t.job_start[q], t.job_len[q]
        for i in range(n // 2 - 1, -1, -1):
            _job_sift(t.job_heap, jobs, base, n, i, t.job_heap[base + i])
    for i in range(order.shape[0]):
        q = order[i]
        h = _head(t, q)
        if h < 0:
            continue
        _set_key(t, q, jobs.req[h])
        t.head[q] = h
        p = t.parent[q] if t.parent[q] >= 0 else nq
        t.heap[t.seg_start[p] + t.seg_len[p]] = q
        t.seg_len[p] += 1
    for p in range(nq + 1):
        n = t.seg_len[p]
        for i in range(n // 2 - 1, -1, -1):
            _q_siftup(t, t.seg_start[p], n, i)


@njit(cache=True, inline="always")
def _pop(t, jobs, ctl):
    nq = t.parent.shape[0]
    if t.seg_len[nq] == 0:
        return -1
    q = t.heap[t.seg_start[nq]]
    t.path[0] = q
    n = 1
    while not t.has_jobs[q]:
        q = t.heap[t.seg_start[q]]
        t.path[n] = q
        n += 1
    ctl[C_PATH] = n
    return _job_pop(t, jobs, q)


@njit(cache=True, inline="always")
def _done(t, jobs, ctl, j, again):
    """``JobQueue.done``: re-push the job if asked, then refresh the entries along the popped path."""
    nq = t.parent.shape[0]
    n = ctl[C_PATH]
    if again:
        _job_push(t, jobs, t.path[n - 1], j)
    for i in range(n - 1, -1, -1):
        q = t.path[i]
        p = nq if i == 0 else t.path[i - 1]
        base = t.seg_start[p]
        size = t.seg_len[p]
        h = _head(t, q)
        if h < 0:
            # heappop of the top (q): the last item moves to the top and sifts
            size -= 1
            t.seg_len[p] = size
            if size > 0:
                t.heap[base] = t.heap[base + size]
                _q_siftup(t, base, size, 0)
        else:
            _set_key(t, q, jobs.req[h])
            t.head[q] = h
            _q_siftup(t, base, size, 0)
    ctl[C_PATH] = 0


# -- a plain job's attempt -----------------------------------------------------------------------


@njit(cache=True, inline="always")
def _record(out, ctl, j, code, q, r, value):
    k = ctl[C_RECORDS]
    out.job[k] = j
    out.code[k] = code
    out.queue[k] = q
    out.res[k] = r
    out.value[k] = value
    ctl[C_RECORDS] = k + 1


@njit(cache=True, inline="always")
def _charge(t, ctl, leaf, gpu, cpu, mem, non_preemptible):
    for k in range(t.anc_start[leaf], t.anc_start[leaf + 1]):
        q = t.anc[k]
        t.alloc[q, 0] += gpu
        t.alloc[q, 1] += cpu
        t.alloc[q, 2] += mem
        if non_preemptible:
            t.alloc_np[q, 0] += gpu
            t.alloc_np[q, 1] += cpu
            t.alloc_np[q, 2] += mem
        if not t.dirty[q]:
            t.dirty[q] = True
            t.dirty_list[ctl[C_DIRTY]] = q
            ctl[C_DIRTY] += 1


@njit(cache=True, inline="always")
def _over_capacity(t, jobs, out, ctl, j):
    """Record why job j does not fit its queues (a limit, or a non-preemptible job's quota); False if it fits."""
    leaf = jobs.leaf[j]
    chain = t.anc[t.anc_start[leaf] : t.anc_start[leaf + 1]]
    q, r = first_exceeded(chain, t.limit, t.alloc, jobs.req[j])
    if q >= 0:
        _record(out, ctl, j, OVER_LIMIT, q, r, t.alloc[q, r])
        return True
    if not jobs.preemptible[j]:
        q, r = first_exceeded(chain, t.quota, t.alloc_np, jobs.req[j])
        if q >= 0:
            _record(out, ctl, j, OVER_QUOTA, q, r, t.alloc_np[q, r])
            return True
    return False


@njit(cache=True, inline="always")
def _best_node_for(nodes, index, sg, sc, elig, req):
    """The node ``placement.place`` would choose for the pod ``req`` asks for, or -1."""
    if req.kind == pl.WHOLE:
        return _indexed_best_whole(nodes, elig, req, index)
    if req.kind == pl.FRACTION or req.kind == pl.MEMORY:  # noqa: SIM109 (numba)
        return _indexed_best_fraction(nodes, elig, req, sg, sc, index)
    return _scan_best(nodes, elig, req, sg, sc)


@njit(cache=True, inline="always")
def _unbind(pods, first, nodes, index, out, base, count):
    """Undo the first ``count`` placements of a shape whose pod rows start at ``first``, newest first."""
    for u in range(count - 1, -1, -1):
        m = base + u
        _unapply(nodes, out.node[m], _request(pods, first + u), out.devices[m], out.share[m])
        _refile(nodes.ints, nodes.dev, out.node[m], index)


@njit(cache=True, inline="always")
def _pipeline_gang(out, base, n, min_available):
    """Apply ``pipelines_whole_gang`` to the n placements from ``base``."""
    running = 0
    any_piped = False
    for i in range(n):
        if out.pipelined[base + i]:
            any_piped = True
        else:
            running += 1
    if pipelines_whole_gang(any_piped, running, min_available):
        for i in range(n):
            out.pipelined[base + i] = True


@njit(cache=True, inline="always")
def _attempt(t, jobs, shapes, nodes, index, sg, sc, out, ctl, j):
    """Try plain job j whole; returns False when its shape found no room for the first time (undone)."""
    if _over_capacity(t, jobs, out, ctl, j):
        return True
    s = jobs.shape[j]
    if shapes.failed[s]:
        _record(out, ctl, j, SHAPE_FAILED, -1, -1, 0.0)
        return True
    pods = shapes.pods
    first = shapes.start[s]
    n = shapes.start[s + 1] - first
    base = ctl[C_PLACED]
    for i in range(n):
        row = first + i
        req = _request(pods, row)
        node = _best_node_for(nodes, index, sg, sc, pods.eligible[pods.ints[row, pl.P_SPEC]], req)
        if node < 0:
            _unbind(pods, first, nodes, index, out, base, i)
            ctl[C_COUNT] = i
            return False
        m = base + i
        out.devices[m, :] = -1
        out.share[m] = 0.0
        out.node[m] = node
        # the batch path places pending jobs: idle devices first
        out.pipelined[m] = _apply(nodes, node, req, sg, out.devices, out.share, m, False)
        _refile(nodes.ints, nodes.dev, node, index)
    _pipeline_gang(out, base, n, jobs.min_available[j])
    non_preemptible = not jobs.preemptible[j]
    for i in range(n):
        row = first + i
        cpu, mem = float(pods.ints[row, pl.P_CPU]), float(pods.ints[row, pl.P_MEM])
        _charge(t, ctl, jobs.leaf[j], shapes.gpu[row], cpu, mem, non_preemptible)
    ctl[C_PLACED] = base + n
    _record(out, ctl, j, PLACED, -1, -1, 0.0)
    return True


@njit(cache=True)
def _run(t, jobs, shapes, nodes, index, sg, sc, out, ctl):
    """Pop and try jobs until the order is empty (FINISHED) or a job needs Python (its index in ctl)."""
    # One call of the inlined done() finishes every job (a resumed one, a skipped one, a placed one):
    # each call site would be another copy of it to compile.
    finished = ctl[C_JOB] if ctl[C_RESUME] else -1
    again = ctl[C_RESUME] != 0 and ctl[C_AGAIN] != 0
    ctl[C_RESUME] = 0
    while True:
        if finished >= 0:
            _done(t, jobs, ctl, finished, again)
            finished, again = -1, False
        j = _pop(t, jobs, ctl)
        if j < 0:
            return FINISHED
        ctl[C_JOB] = j
        if jobs.skip[j]:
            finished = j
            continue
        if jobs.shape[j] < 0:
            return PYTHON_JOB
        if not _attempt(t, jobs, shapes, nodes, index, sg, sc, out, ctl, j):
            return FIRST_NO_FIT
        finished = j


@njit(cache=True)
def _next_batch(t, jobs, out, ctl, limit, hold_last):
    """Pop up to ``limit`` jobs that have pods to place into ``out.job`` (count in ctl), passing over the
    rest, each finished with done(job, False) at the shares as they stand; with ``hold_last`` the last
    one is left popped but not done. Returns FINISHED once the order is empty."""
    finished = ctl[C_JOB] if ctl[C_RESUME] else -1  # one done() call site, as in _run
    ctl[C_RESUME] = 0
    k = 0
    while True:
        if finished >= 0:
            _done(t, jobs, ctl, finished, False)
            finished = -1
        if k >= limit:
            break
        j = _pop(t, jobs, ctl)
        if j < 0:
            ctl[C_RECORDS] = k
            return FINISHED
        if jobs.skip[j]:
            finished = j
            continue
        out.job[k] = j
        k += 1
        ctl[C_JOB] = j
        if k == limit and hold_last:
            break
        finished = j
    ctl[C_RECORDS] = k
    return PYTHON_JOB


# -- the Python side -----------------------------------------------------------------------------

Attempt = Callable[[Session, Job, list[int], tuple[float, float, float], dict], bool]


def allocate(
    s: Session, leaf_jobs: dict[int, list[Job]], attempt: Attempt, failed_shapes: dict[tuple, str]
) -> None:
    """Run allocate over ``leaf_jobs`` (per leaf queue, in name order), using ``attempt`` for jobs that are
    not plain, exactly as the reference loop would."""
    jobs, leaf_of = _flatten(leaf_jobs)
    to_place = _ToPlace(s, jobs)
    arrays, shapes, shape_keys = _allocate_jobs(s, jobs, leaf_of, to_place)
    shape_index = {key: k for k, key in enumerate(shape_keys)}
    tree, order = _tree(s, arrays, leaf_jobs)
    _build(tree, arrays, order)
    plain = arrays.shape >= 0
    out = _allocate_out(s, len(jobs), int(np.diff(shapes.start)[arrays.shape[plain]].sum()))
    ctl = np.zeros(8, dtype=np.int64)
    index = s.gpu_index()
    sg = pl.STRATEGIES.get(s.config.placement_gpu, pl.BINPACK)  # a policy's jobs never reach the kernel
    sc = pl.STRATEGIES[s.config.placement_cpu]
    flushed = [0, 0]
    reason_cache: dict[tuple, str] = {}
    while True:
        placed_before = ctl[C_PLACED]
        status = _run(tree, arrays, shapes, s.nodes, index, sg, sc, out, ctl)
        if ctl[C_PLACED] != placed_before:  # a failed try leaves the nodes as they were
            s.nodes_version += 1
        _flush(s, jobs, shapes, shape_keys, failed_shapes, arrays, out, ctl, flushed, reason_cache)
        _sync_to_session(s, tree, ctl)
        if status == FINISHED:
            return
        j = int(ctl[C_JOB])
        if status == PYTHON_JOB:
            again = _try_in_python(
                s, jobs[j], j, attempt, to_place, tree, arrays, shapes, shape_index, failed_shapes
            )
        else:
            _first_no_fit(
                s, jobs[j], int(arrays.shape[j]), int(ctl[C_COUNT]), shapes, shape_keys, failed_shapes
            )
            again = False
        ctl[C_RESUME] = 1
        ctl[C_AGAIN] = int(again)


class _ToPlace:
    """Each job's pods to place and their request, asked once until an attempt changes them."""

    def __init__(self, s: Session, jobs: list[Job]) -> None:
        self.s = s
        self.jobs = jobs
        self.known: dict[int, tuple[list[int], tuple[float, float, float]]] = {}

    def __call__(self, j: int) -> tuple[list[int], tuple[float, float, float]]:
        hit = self.known.get(j)
        if hit is None:
            job = self.jobs[j]
            pods = self.s.pods_to_place(job)
            hit = self.known[j] = (pods, self.s.request_of(job, pods))
        return hit

    def forget(self, j: int) -> None:
        self.known.pop(j, None)


def _plain(s: Session, jobs: list[Job], state_shape: np.ndarray) -> np.ndarray:
    """Which jobs the kernel tries whole: a shape, nothing placed yet, untouched so far this session."""
    fresh = np.array([j.n_pending == len(j.pods) for j in jobs], dtype=np.bool_)
    plain = (state_shape >= 0) & fresh
    if is_policy(s.config.placement_gpu):
        # a placement policy is Python (policy_placement): jobs with GPU pods go the reference way
        plain &= _cpu_only(jobs, state_shape)
    touched = s.placed.keys() | s.evicted.keys()
    if touched:
        plain &= np.array([j.name not in touched for j in jobs], dtype=np.bool_)
    view = s.pod_affinity()
    if view is not None:
        # pods some job's anti-affinity selects are placed one at a time (``Statement.place``)
        plain &= np.array([not view.constrained(j) for j in jobs], dtype=np.bool_)
    return plain


def _allocate_jobs(
    s: Session, jobs: list[Job], leaf_of: list[int], to_place: _ToPlace
) -> tuple[Jobs, Shapes, list[tuple]]:
    """The kernel's job arrays, plain jobs grouped by shape (one representative each), the shapes' keys."""
    nj = len(jobs)
    state_shape = np.array([j.shape for j in jobs], dtype=np.int64)
    min_available = np.array([j.min_available for j in jobs], dtype=np.int64)
    plain = _plain(s, jobs, state_shape)
    job_shape = np.full(nj, -1, dtype=np.int64)
    ids, first, inverse = np.unique(state_shape[plain], return_index=True, return_inverse=True)
    job_shape[plain] = inverse
    shape_jobs = [jobs[i] for i in np.flatnonzero(plain)[first].tolist()]
    req = np.zeros((nj, 3))
    elastic = elastic_state(np.zeros(nj, dtype=np.int64), min_available)  # nothing of a plain job runs
    for j in np.flatnonzero(~plain).tolist():
        job = jobs[j]
        req[j] = to_place(j)[1]
        elastic[j] = s.elastic(job)
    shapes, shape_keys, shape_reqs = _shapes(s, shape_jobs)
    plain = job_shape >= 0
    if shape_reqs.shape[0]:
        req[plain] = shape_reqs[job_shape[plain]]
    skip = np.zeros(nj, dtype=np.bool_)
    arrays = _job_arrays(jobs, leaf_of, job_shape, min_available, elastic, req, skip)
    return arrays, shapes, shape_keys


def _job_arrays(
    jobs: list[Job],
    leaf_of: list[int],
    shape: np.ndarray,
    min_available: np.ndarray,
    elastic: np.ndarray,
    req: np.ndarray,
    skip: np.ndarray,
) -> Jobs:
    """The kernel's per-job arrays: what orders the jobs (priority, elastic state, submission) and what
    each asks for, beside the columns the caller worked out."""
    return Jobs(
        neg_priority=-np.array([j.priority for j in jobs], dtype=np.int64),
        elastic=elastic,
        submitted=np.array([j.submitted_at for j in jobs], dtype=np.float64),
        req=req,
        leaf=np.array(leaf_of, dtype=np.int64),
        shape=shape,
        preemptible=np.array([j.preemptible for j in jobs], dtype=np.bool_),
        min_available=min_available,
        skip=skip,
    )


def _allocate_out(s: Session, nj: int, n_pods: int) -> Out:
    g = max(s.nodes.dev.shape[2], 1)
    return Out(
        job=np.zeros(nj, dtype=np.int64),
        code=np.zeros(nj, dtype=np.int64),
        queue=np.zeros(nj, dtype=np.int64),
        res=np.zeros(nj, dtype=np.int64),
        value=np.zeros(nj),
        node=np.zeros(n_pods, dtype=np.int64),
        devices=np.full((n_pods, g), -1, dtype=np.int64),
        share=np.zeros(n_pods),
        pipelined=np.zeros(n_pods, dtype=np.bool_),
    )


def _try_in_python(
    s: Session,
    job: Job,
    j: int,
    attempt: Attempt,
    to_place: _ToPlace,
    tree: Tree,
    arrays: Jobs,
    shapes: Shapes,
    shape_index: dict[tuple, int],
    failed_shapes: dict[tuple, str],
) -> bool:
    """Try a job the kernel handed back with ``attempt``, and bring the kernel's arrays up to date with
    what it changed; whether the job goes back in the order (it placed some pods and has more)."""
    table = s.table
    pods, r = to_place(j)
    ok = bool(pods) and attempt(s, job, pods, r, failed_shapes)
    to_place.forget(j)
    again = ok and bool(s.pending_pods(job))
    for q in table.ancestors[table.index[job.queue]]:
        tree.alloc[q] = s.alloc[q]
        tree.alloc_np[q] = s.alloc_np[q]
    if pods:
        # the one shape this attempt may have found without room
        key = (job.pool, job.topology, tuple(job.pods[i] for i in pods))
        k = shape_index.get(key)
        if k is not None and key in failed_shapes:
            shapes.failed[k] = True
    if again:
        arrays.elastic[j] = s.elastic(job)
        arrays.req[j] = to_place(j)[1]
    return again


def _first_no_fit(
    s: Session,
    job: Job,
    k: int,
    count: int,
    shapes: Shapes,
    shape_keys: list[tuple],
    failed_shapes: dict[tuple, str],
) -> None:
    """The first plain job of shape k found no room (``count`` pods fitted): why, for it and its shape."""
    pods = list(range(len(job.pods)))
    why = s.no_fit(job, pods, count)
    failed_shapes[shape_keys[k]] = why
    shapes.failed[k] = True
    s.reasons[job.name] = why


Visit = Callable[[Job, list[int], tuple[float, float, float]], None]


def can_visit(s: Session, leaf_jobs: dict[int, list[Job]]) -> bool:
    """Whether ``visit`` gives the reference order: no waiting job can lose or regain pods to another job's
    attempt (a waiting job with running preemptible pods could, changing its pods to place mid-pass)."""
    return not any(j.n_running and j.preemptible for jobs in leaf_jobs.values() for j in jobs)


def visit(s: Session, leaf_jobs: dict[int, list[Job]], fn: Visit) -> None:
    """Call ``fn(job, pods, request)`` for each job that has pods to place, in the order the reference
    loop over ``pending_order`` pops them (every job popped once, ``done(job, False)``); only when
    ``can_visit``."""
    jobs, leaf_of = _flatten(leaf_jobs)
    nj = len(jobs)
    placed, evicted = s.placed, s.evicted
    state_shape = np.array([j.shape for j in jobs], dtype=np.int64)
    n_pods = np.array([len(j.pods) for j in jobs], dtype=np.int64)
    fresh = (state_shape >= 0) & (np.array([j.n_pending for j in jobs], dtype=np.int64) == n_pods)
    n_placed = np.array([len(placed.get(j.name, ())) for j in jobs], dtype=np.int64)
    if evicted:
        fresh &= np.array([j.name not in evicted for j in jobs], dtype=np.bool_)
    untouched = fresh & (n_placed == 0)
    whole = fresh & (n_placed == n_pods)  # a plain job is placed all at once or not at all
    min_available = np.array([j.min_available for j in jobs], dtype=np.int64)
    active = np.where(whole, n_pods, 0)
    elastic = elastic_state(active, min_available)
    req = np.zeros((nj, 3))
    skip = whole.copy()
    ids, first, inverse = np.unique(state_shape[untouched], return_index=True, return_inverse=True)
    if ids.size:
        reps = [jobs[i] for i in np.flatnonzero(untouched)[first].tolist()]
        reqs = np.array([s.request_of(r, list(range(len(r.pods)))) for r in reps], dtype=np.float64)
        req[untouched] = reqs[inverse]
    requests: dict[int, tuple[list[int], tuple[float, float, float]]] = {}
    for j in np.flatnonzero(~(untouched | whole)).tolist():
        job = jobs[j]
        pods = s.pods_to_place(job)
        requests[j] = (pods, s.request_of(job, pods))
        req[j] = requests[j][1]
        skip[j] = not pods
        elastic[j] = s.elastic(job)
    arrays = _job_arrays(jobs, leaf_of, np.full(nj, -1, dtype=np.int64), min_available, elastic, req, skip)
    tree, order = _tree(s, arrays, leaf_jobs)
    _build(tree, arrays, order)
    ctl = np.zeros(8, dtype=np.int64)
    batch = np.zeros(max(nj, 1), dtype=np.int64)
    out = Out(batch, *(np.zeros(0, dtype=np.int64) for _ in range(3)), np.zeros(0), *_no_placements(s))
    size = 16
    while True:
        # jobs are tried in batches popped ahead at today's shares; a try that changes the shares
        # invalidates the rest, so the order is rewound to it and continues from there
        saved = _save(tree, ctl)
        status = _next_batch(tree, arrays, out, ctl, size, False)
        popped = batch[: int(ctl[C_RECORDS])].tolist()
        changed_at = -1
        for i, j in enumerate(popped):
            hit = requests.get(j)
            if hit is None:
                hit = (list(range(len(jobs[j].pods))), tuple(arrays.req[j].tolist()))
            version = s.alloc_version
            fn(jobs[j], hit[0], hit[1])
            if s.alloc_version != version and _shares_moved(s, tree):
                changed_at = i
                break
        if changed_at < 0:
            if status == FINISHED:
                return
            size = min(size * 2, 4096)
            continue
        _restore(tree, ctl, saved)
        _next_batch(tree, arrays, out, ctl, changed_at + 1, True)
        tree.alloc[:] = s.alloc
        tree.alloc_np[:] = s.alloc_np
        ctl[C_RESUME] = 1
        size = 16


def _cpu_only(jobs: list[Job], state_shape: np.ndarray) -> np.ndarray:
    """Per job, whether it has no GPU pod (jobs of one shape are asked once)."""
    known: dict[int, bool] = {}
    out = np.zeros(len(jobs), dtype=np.bool_)
    for j, (job, shape) in enumerate(zip(jobs, state_shape.tolist(), strict=True)):
        hit = known.get(shape) if shape >= 0 else None
        if hit is None:
            hit = all(p.kind == pl.CPU_ONLY for p in job.pods)
            if shape >= 0:
                known[shape] = hit
        out[j] = hit
    return out


def _no_placements(s: Session) -> tuple[np.ndarray, ...]:
    g = max(s.nodes.dev.shape[2], 1)
    return (
        np.zeros(0, dtype=np.int64),
        np.zeros((0, g), dtype=np.int64),
        np.zeros(0),
        np.zeros(0, dtype=np.bool_),
    )


def _shares_moved(s: Session, tree: Tree) -> bool:
    """Whether the session's queue sums differ from the kernel's (an undone try may leave them as they were)."""
    return not (
        np.array_equal(np.array(s.alloc, dtype=np.float64).reshape(tree.alloc.shape), tree.alloc)
        and np.array_equal(np.array(s.alloc_np, dtype=np.float64).reshape(tree.alloc.shape), tree.alloc_np)
    )


_MUTABLE = ("job_heap", "job_len", "heap", "seg_len", "key_b", "key_f", "head", "path")


def _save(tree: Tree, ctl: np.ndarray) -> tuple[np.ndarray, ...]:
    return (*(getattr(tree, name).copy() for name in _MUTABLE), ctl.copy())


def _restore(tree: Tree, ctl: np.ndarray, saved: tuple[np.ndarray, ...]) -> None:
    for name, value in zip(_MUTABLE, saved[:-1], strict=True):
        getattr(tree, name)[...] = value
    ctl[:] = saved[-1]


def _flatten(leaf_jobs: dict[int, list[Job]]) -> tuple[list[Job], list[int]]:
    """Jobs leaf by leaf (name order within each), and the leaf of each."""
    jobs: list[Job] = []
    leaf_of: list[int] = []
    for q in sorted(leaf_jobs):
        jobs.extend(leaf_jobs[q])
        leaf_of.extend([q] * len(leaf_jobs[q]))
    return jobs, leaf_of


def _shapes(s: Session, shape_jobs: list[Job]) -> tuple[Shapes, list[tuple], np.ndarray]:
    """Pod rows of each plain shape (one representative job each), their failed-shape keys and requests."""
    n_ext = s.nodes.ext.shape[2]
    ext_names = s.state.node_table.ext_names
    start = [0]
    rows: list[tuple] = []
    share: list[float] = []
    gpu: list[float] = []
    ext_rows: list[list[int]] = []
    spec_ids: dict[tuple, int] = {}
    masks: list[np.ndarray] = []
    keys: list[tuple] = []
    reqs: list[tuple[float, float, float]] = []
    for job in shape_jobs:
        pods = list(range(len(job.pods)))
        keys.append((job.pool, job.topology, tuple(job.pods)))
        reqs.append(s.request_of(job, pods))
        for p in job.pods:
            spec = (job.pool, p.spec_key)
            k = spec_ids.get(spec)
            if k is None:
                k = spec_ids[spec] = len(masks)
                masks.append(s.eligible(job, p.spec_key))
            rows.append((p.kind, p.whole, p.gpu_memory, p.cpu, p.memory, k))
            share.append(p.share)
            gpu.append(p.gpu)
            e = [0] * n_ext
            for name, amount in p.ext:
                if name in ext_names:
                    e[ext_names.index(name)] = amount
            ext_rows.append(e)
        start.append(len(rows))
    n_nodes = s.nodes.ints.shape[0]
    pods = pl.PodArrays(
        np.array(rows, dtype=np.int64).reshape(len(rows), pl.P_INT_COLS),
        np.array(share, dtype=np.float64),
        np.array(ext_rows, dtype=np.int64).reshape(len(rows), n_ext),
        np.array(masks, dtype=np.bool_).reshape(len(masks), n_nodes),
    )
    shapes = Shapes(
        np.array(start, dtype=np.int64),
        pods,
        np.array(gpu, dtype=np.float64),
        np.zeros(len(shape_jobs), dtype=np.bool_),
    )
    return shapes, keys, np.array(reqs, dtype=np.float64).reshape(len(reqs), 3)


def _tree(s: Session, jobs: Jobs, leaf_jobs: dict[int, list[Job]]) -> tuple[Tree, np.ndarray]:
    table, shares = s.table, s.shares
    nq = len(table.names)
    parent = np.asarray(table.parent, dtype=np.int64)
    anc_start = np.zeros(nq + 1, dtype=np.int64)
    anc: list[int] = []
    for q in range(nq):
        anc.extend(table.ancestors[q])
        anc_start[q + 1] = len(anc)
    # heap segments: the children of each queue, then the top level
    seg_size = np.zeros(nq + 1, dtype=np.int64)
    for q in range(nq):
        seg_size[parent[q] if parent[q] >= 0 else nq] += 1
    seg_start = np.zeros(nq + 2, dtype=np.int64)
    seg_start[1:] = np.cumsum(seg_size)
    # job heaps: each leaf's jobs as _flatten lists them, heapified by _build with job_order
    nj = jobs.leaf.shape[0]
    has_jobs = np.zeros(nq, dtype=np.bool_)
    job_start = np.zeros(nq, dtype=np.int64)
    job_len = np.zeros(nq, dtype=np.int64)
    for q in sorted(leaf_jobs):
        if leaf_jobs[q]:
            has_jobs[q] = True
            job_len[q] = len(leaf_jobs[q])
    pos = 0
    for q in sorted(leaf_jobs):
        job_start[q] = pos
        pos += job_len[q]
    depth = [len(table.ancestors[q]) - 1 for q in range(nq)]
    tree = Tree(
        parent=parent,
        neg_priority=-np.array(table.priority, dtype=np.int64),
        quota=np.asarray(table.quota, dtype=np.float64),
        limit=np.asarray(table.limit, dtype=np.float64),
        fair=np.array(shares.fair, dtype=np.float64).reshape(nq, 3),
        allocatable=np.array(shares.allocatable, dtype=np.float64).reshape(nq, 3),
        cap=np.array(shares.cap, dtype=np.float64).reshape(nq, 3),
        total=np.array(shares.total, dtype=np.float64),
        anc_start=anc_start,
        anc=np.array(anc, dtype=np.int64),
        alloc=np.array(s.alloc, dtype=np.float64).reshape(nq, 3),
        alloc_np=np.array(s.alloc_np, dtype=np.float64).reshape(nq, 3),
        dirty=np.zeros(nq, dtype=np.bool_),
        dirty_list=np.zeros(nq, dtype=np.int64),
        seg_start=seg_start,
        seg_len=np.zeros(nq + 1, dtype=np.int64),
        heap=np.zeros(max(int(seg_start[-1]), 1), dtype=np.int64),
        key_b=np.zeros((nq, 4), dtype=np.int64),
        key_f=np.zeros((nq, 2)),
        head=np.full(nq, -1, dtype=np.int64),
        has_jobs=has_jobs,
        job_start=job_start,
        job_len=job_len,
        job_heap=np.arange(nj, dtype=np.int64),  # each leaf's jobs, in name order: _build heapifies them
        path=np.zeros(max(depth, default=0) + 2, dtype=np.int64),
    )
    # the order JobQueue appends entries in: the same set built the same way, deepest first
    active = {q for q in sorted(leaf_jobs) if leaf_jobs[q]}
    for q in list(active):
        p = parent[q]
        while p >= 0 and p not in active:
            active.add(int(p))
            p = parent[p]
    order = np.array(sorted(active, key=lambda q: -depth[q]), dtype=np.int64)
    return tree, order


def _sync_to_session(s: Session, tree: Tree, ctl: np.ndarray) -> None:
    """Copy the queue sums the kernel changed into the session's lists (rows are shared, update in place)."""
    n = int(ctl[C_DIRTY])
    if not n:
        return
    for q in tree.dirty_list[:n].tolist():
        s.alloc[q][:] = tree.alloc[q].tolist()
        s.alloc_np[q][:] = tree.alloc_np[q].tolist()
        tree.dirty[q] = False
    ctl[C_DIRTY] = 0


def _flush(
    s: Session,
    jobs: list[Job],
    shapes: Shapes,
    shape_keys: list[tuple],
    failed_shapes: dict[tuple, str],
    arrays: Jobs,
    out: Out,
    ctl: np.ndarray,
    flushed: list[int],
    reason_cache: dict[tuple, str],
) -> None:
    """Turn the kernel's new records into decisions, placements and reasons, in order."""
    r0, p0 = flushed
    r1, p1 = int(ctl[C_RECORDS]), int(ctl[C_PLACED])
    flushed[0], flushed[1] = r1, p1
    if r1 == r0:
        return
    nodes = out.node[p0:p1].tolist()
    devices = out.devices[p0:p1].tolist()
    shares = out.share[p0:p1].tolist()
    piped = out.pipelined[p0:p1].tolist()
    slot_names = s.slot_names
    state_nodes = s.state.node_table.nodes
    decisions = s.decisions
    placed = s.placed
    cycle, epoch = s.cycle, s.epoch
    sreasons = s.reasons
    pools: dict[int, str] = {}
    m = 0
    for j, code, q, r, value in zip(
        out.job[r0:r1].tolist(),
        out.code[r0:r1].tolist(),
        out.queue[r0:r1].tolist(),
        out.res[r0:r1].tolist(),
        out.value[r0:r1].tolist(),
        strict=True,
    ):
        job = jobs[j]
        if code == PLACED:
            name = job.name
            mine = placed.setdefault(name, {})
            for pod in range(len(job.pods)):
                slot = nodes[m]
                row = devices[m]
                gpus = row[: row.index(-1)] if -1 in row else row
                pool = pools.get(slot)
                if pool is None:
                    pool = pools[slot] = state_nodes[slot_names[slot]].spec.pool
                share = shares[m]
                pipe = piped[m]
                mine[pod] = (slot, tuple(gpus), share, pipe)
                decisions.append(
                    BindRequested(
                        job=name,
                        pod=pod,
                        node=slot_names[slot],
                        gpus=gpus,
                        gpu_share=share,
                        pool=pool,
                        cycle=cycle,
                        epoch=epoch,
                        pipelined=pipe,
                    )
                )
                m += 1
            sreasons.pop(name, None)
            continue
        if code == SHAPE_FAILED:
            sreasons[job.name] = failed_shapes[shape_keys[arrays.shape[j]]]
            continue
        want = float(arrays.req[j, r])
        key = (code, q, r, value, want)
        why = reason_cache.get(key)
        if why is None:
            text = over_limit_text if code == OVER_LIMIT else over_quota_text
            why = reason_cache[key] = text(s.table, q, r, value, want)
        sreasons[job.name] = why
