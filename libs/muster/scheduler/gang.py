"""Gang rules every action shares: a job's elastic state, and when KAI pipelines a whole gang.

``pipelines_whole_gang`` is jitted so the batch kernel calls it compiled;
Python callers run the same source through ``py_func``. ``elastic_state``
is written with comparisons only, so it reads one job or arrays of them.
"""

from __future__ import annotations

from muster.kernels.jit import njit

from .state import BINDING, BOUND, Job, leaf_counts


def elastic_state(active, min_available):
    """0 below ``min_available``, 1 exactly at it, 2 above it (element-wise on arrays)."""
    return (active >= min_available) * 1 + (active > min_available) * 1


@njit(cache=True, inline="always")
def pipelines_whole_gang(any_pipelined, running, min_available):
    """Whether every pod a gang places now is pipelined: some of them wait for releasing resources, and
    the pods that would really run (bound, binding, or placed now on free room) stay below its minimum."""
    return any_pipelined and running < min_available


_pipelines_whole_gang = pipelines_whole_gang.py_func


def pipeline_all(s, job: Job, placed: list[tuple]) -> bool:
    """``pipelines_whole_gang`` for ``job`` about to commit ``placed`` (statement placements) in session ``s``."""
    if not any(p[5] for p in placed):
        return False
    earlier = s.placed.get(job.name, {})
    if job.subgroups:
        return _pipelines_a_leaf(job, earlier, placed)
    running = sum(1 for st in job.state if st in (BINDING, BOUND))
    running += sum(1 for v in earlier.values() if not v[3])
    running += sum(1 for p in placed if not p[5])
    return _pipelines_whole_gang(True, running, job.min_available)


def _pipelines_a_leaf(job: Job, earlier: dict, placed: list[tuple]) -> bool:
    """On a sub-group tree the rule is checked per leaf (§1): some pod of a leaf is pipelined now while
    the pods of that leaf that really run stay below its minimum."""
    tree = job.tree
    piped = {p[1] for p in placed if p[5]}
    now = {p[1] for p in placed if not p[5]}
    running = leaf_counts(
        tree,
        job.pods,
        lambda i: job.state[i] in (BINDING, BOUND) or i in now or (i in earlier and not earlier[i][3]),
    )
    leaves = {tree.leaf_of.get(job.pods[i].subgroup) for i in piped} - {None}
    return any(_pipelines_whole_gang(True, running[k], tree.need[k]) for k in leaves)
