"""Gang rules every action shares: a job's elastic state, and when KAI pipelines a whole gang.

``pipelines_whole_gang`` is jitted so the batch kernel calls it compiled;
Python callers run the same source through ``py_func``. ``elastic_state``
is written with comparisons only, so it reads one job or arrays of them.
"""

from __future__ import annotations

from muster.kernels.jit import njit

from .state import BINDING, BOUND, Job


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
    running = sum(1 for st in job.state if st in (BINDING, BOUND))
    running += sum(1 for v in s.placed.get(job.name, {}).values() if not v[3])
    running += sum(1 for p in placed if not p[5])
    return _pipelines_whole_gang(True, running, job.min_available)
