"""KAI's allocate action (§5): pending jobs in queue/job order, each placed whole in one statement or not at all."""

from __future__ import annotations

import numpy as np

from muster.kernels import placement as pl
from muster.tolerances import EPS

from .. import batch
from ..capacity import capacity_reason
from ..gang import pipeline_all
from ..session import Session
from ..state import ACTIVE, Job
from ..statement import Statement
from .common import pending_by_leaf


class AllocateAction:
    """The loop runs in the batch kernel, which hands jobs it cannot try whole back to ``_attempt``."""

    name = "allocate"
    clock_dependent = False

    def run(self, s: Session) -> None:
        leaf_jobs = self.queued(s)
        if leaf_jobs:
            batch.allocate(s, leaf_jobs, self._attempt, {})

    @staticmethod
    def queued(s: Session) -> dict[int, list[Job]]:
        """Pending jobs by leaf queue, in name order; a job that cannot be queued gets its reason."""
        return pending_by_leaf(s, record=True)

    def _attempt(
        self,
        s: Session,
        job: Job,
        pods: list[int],
        req: tuple[float, float, float],
        failed_shapes: dict[tuple, str],
    ) -> bool:
        why = capacity_reason(s, job, req)
        if why is not None:
            s.reasons[job.name] = why
            return False
        # within one allocate pass resources only shrink, so a shape that found no room never will; but
        # pods placed later in the pass may meet a pod affinity, so those jobs are not remembered
        view = s.pod_affinity()
        shape = (job.pool, job.topology, tuple(job.pods[i] for i in pods))
        cached = view is None or not view.constrained(job)
        why = failed_shapes.get(shape) if cached else None
        if why is not None:
            s.reasons[job.name] = why
            return False
        stmt = Statement(s)
        why = place_job(s, stmt, job, pods)
        if why is not None:
            if cached:
                failed_shapes[shape] = why
            s.reasons[job.name] = why
            return False
        placed = stmt.placements()
        stmt.commit(pipeline_all=pipeline_all(s, job, placed), placements=placed)
        s.reasons.pop(job.name, None)
        return True


def place_job(s: Session, stmt: Statement, job: Job, pods: list[int]) -> str | None:
    """Place all ``pods`` in the statement; None on success, else why not (the statement is then empty)."""
    topo = job.topology
    level = topo.required or topo.preferred if topo is not None else None
    if level is None:
        result = stmt.place(job, pods)
        if result.count == len(pods):
            return None
        stmt.discard()
        return s.no_fit(job, pods, result.count)
    domains = topology_domains(s, job, pods, level)
    for _, mask in domains:
        cp = stmt.checkpoint()
        result = stmt.place(job, pods, restrict=mask)
        if result.count == len(pods):
            return None
        stmt.rollback(cp)
    if topo.required is None:
        result = stmt.place(job, pods)
        if result.count == len(pods):
            return None
        stmt.discard()
        return s.no_fit(job, pods, result.count)
    stmt.discard()
    return (
        f"no {level} domain has room for all {len(pods)} pods of the job"
        if len(pods) > 1
        else (f"no node with a {level} label has room for the pod")
    )


def topology_domains(s: Session, job: Job, pods: list[int], level: str) -> list[tuple[str, np.ndarray]]:
    """Domains (values of the ``level`` label) that may hold all pods, least free first, then by value (§5.5).

    At the required level, a job whose pods already run is kept to the domains they run in."""
    n = s.nodes.ints.shape[0]
    pinned = (
        running_domains(s, job, level)
        if job.topology is not None and job.topology.required == level
        else None
    )
    by_value: dict[str, np.ndarray] = {}
    for node in s.state.node_table.nodes.values():
        value = node.spec.labels.get(level)
        if value is None or (pinned and value not in pinned):
            continue
        mask = by_value.get(value)
        if mask is None:
            mask = by_value[value] = np.zeros(n, dtype=np.bool_)
        mask[node.slot] = True
    gpu_req = sum(job.pods[i].gpu for i in pods if job.pods[i].kind != pl.CPU_ONLY)
    cpu_req = sum(job.pods[i].cpu for i in pods)
    ints, dev = s.nodes.ints, s.nodes.dev
    free_gpu = (dev[pl.D_USED] <= EPS).sum(axis=1) - np.maximum(0, dev.shape[2] - ints[:, pl.N_GPUS])
    free_cpu = ints[:, pl.N_CPU_CAP] - ints[:, pl.N_CPU_USED]
    out = []
    for value in sorted(by_value):
        mask = by_value[value]
        fg = float(free_gpu[mask].sum())
        fc = float(free_cpu[mask].sum())
        if fg + EPS < gpu_req or fc < cpu_req:
            continue
        out.append(((fg, fc), value, mask))
    out.sort(key=lambda t: (t[0], t[1]))
    return [(value, mask) for _, value, mask in out]


def running_domains(s: Session, job: Job, level: str) -> set[str]:
    """Values of the ``level`` label of the nodes the job's active pods hold, this session's placements
    and evictions counted (§5.5: running pods pin the required domain, so a job that grows or refills
    its gang stays where it runs)."""
    evicted = s.evicted.get(job.name, ())
    slots = [slot for i, slot in enumerate(job.node) if job.state[i] in ACTIVE and i not in evicted]
    slots += [slot for slot, *_ in s.placed.get(job.name, {}).values()]
    table = s.state.node_table
    out: set[str] = set()
    for slot in slots:
        name = table.name_of(slot) if slot >= 0 else None
        node = table.nodes.get(name) if name is not None else None
        value = node.spec.labels.get(level) if node is not None else None
        if value is not None:
            out.add(value)
    return out
