"""Pod affinity and anti-affinity in a cycle: which pods they constrain, and the nodes each such pod may
use given where every other pod is at that moment (``muster.pod_affinity`` decides).

A pod's static node mask (``NodeTable.eligible``) cannot hold these rules: they depend on pods placed
earlier in the same cycle, a gang's own included. So a constrained job's pods are placed one at a time,
each restricted to the nodes this view allows after the ones before it (``Statement.place``), and never
inside the batch kernel. Pods are constrained when they carry terms of their own, or when some job's
term selects them (its anti-affinity may keep them away, its preferred terms or required affinity
score nodes for them); while no job has terms, the session has no view and every pod keeps the fast
path.

Preferred terms rank the allowed nodes: the pod goes to the best-scoring nodes it fits
(``muster.pod_affinity.preference_scores``), as KAI's score puts them above every other.

Pods that count where they are: those the state holds on a node (binding, pipelined, bound, releasing)
and not evicted this cycle, those placed this cycle, and those a statement has placed so far.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from muster import pod_affinity as pa
from muster.events import PodAffinityTerm

from .state import HOLDING, RELEASING, ClusterState, Job, PodReq

_COUNTED = (*HOLDING, RELEASING)

Placement = tuple[Job, int, int]
"""(job, pod index, node slot) of a pod placed but not yet in the state."""


class PodAffinityView:
    """One session's view of pod (anti-)affinity; ``evicted`` and ``placed`` are the session's own,
    read live."""

    def __init__(
        self,
        state: ClusterState,
        evicted: dict[str, set[int]],
        placed: dict[str, dict[int, tuple]],
    ) -> None:
        self.state = state
        self.evicted = evicted
        self.placed = placed
        jobs = state.jobs
        reqs = [
            req for name in sorted(state.ledger.pod_affinity_jobs) for req in dict.fromkeys(jobs[name].pods)
        ]
        self.selecting: tuple[PodAffinityTerm, ...] = tuple(
            {
                t: None
                for req in reqs
                for t in (
                    *req.pod_anti_affinity,
                    *req.pod_affinity,
                    *(w.pod_affinity_term for w in req.preferred_pod_affinity),
                    *(w.pod_affinity_term for w in req.preferred_pod_anti_affinity),
                )
            }
        )
        """Every term of every job's pods, pending or not: a pod one of them selects may be kept off a
        domain (anti-affinity) or drawn to or from one (the scores) once that job's pods are placed."""
        self._constrained: dict[str, bool] = {}
        self._base: list[tuple[str, int, pa.PlacedPod]] | None = None
        self._labels: dict[tuple[tuple[str, str], ...], dict[str, str]] = {}
        table = state.node_table
        self.node_labels: list[dict[str, str] | None] = [None] * table.arrays.ints.shape[0]
        for node in table.nodes.values():
            self.node_labels[node.slot] = node.spec.labels

    def constrained(self, job: Job) -> bool:
        """Whether the job's pods must be placed one at a time under these rules: a pod of it has terms,
        or some job's term selects one of its pods."""
        hit = self._constrained.get(job.name)
        if hit is None:
            hit = self._constrained[job.name] = job.name in self.state.ledger.pod_affinity_jobs or any(
                pa.selects_any(self.selecting, dict(req.labels)) for req in dict.fromkeys(job.pods)
            )
        return hit

    def _held(self) -> list[tuple[str, int, pa.PlacedPod]]:
        """(job name, pod, the pod as it counts) of every pod the state holds on a node, as the cycle
        opened; built once a cycle."""
        if self._base is None:
            self._base = [
                (job.name, i, placed)
                for job in self.state.jobs.values()
                if job.n_active or job.n_pending < len(job.pods)
                for i, st in enumerate(job.state)
                if st in _COUNTED and (placed := self._as_placed(job.pods[i], job.node[i])) is not None
            ]
        return self._base

    def _as_placed(self, req: PodReq, slot: int) -> pa.PlacedPod | None:
        node = self.node_labels[slot] if 0 <= slot < len(self.node_labels) else None
        if node is None:
            return None
        labels = self._labels.get(req.labels)
        if labels is None:
            labels = self._labels[req.labels] = dict(req.labels)
        return pa.PlacedPod(
            node,
            labels,
            req.pod_anti_affinity,
            req.pod_affinity,
            req.preferred_pod_affinity,
            req.preferred_pod_anti_affinity,
        )

    def _counted(self, pending: Iterable[Placement]) -> list[pa.PlacedPod]:
        evicted = self.evicted
        out = [p for name, i, p in self._held() if not evicted or i not in evicted.get(name, ())]
        for name, pods in self.placed.items():
            job = self.state.jobs[name]
            for i, (slot, *_) in pods.items():
                if (p := self._as_placed(job.pods[i], slot)) is not None:
                    out.append(p)
        for job, i, slot in pending:
            if (p := self._as_placed(job.pods[i], slot)) is not None:
                out.append(p)
        return out

    def mask(self, job: Job, pod: int, pending: Iterable[Placement]) -> tuple[np.ndarray, np.ndarray | None]:
        """Node slots pod ``pod`` of ``job`` may use under pod (anti-)affinity, and each slot's score of
        the preferred terms (None when every score is 0), counting ``pending`` placements (a statement's,
        not yet committed) besides the session's and the state's."""
        req = job.pods[pod]
        placed = self._counted(pending)
        labels = dict(req.labels)
        allowed = pa.allowed_nodes(labels, req.pod_affinity, req.pod_anti_affinity, placed, self.node_labels)
        scores = pa.preference_scores(
            labels, req.preferred_pod_affinity, req.preferred_pod_anti_affinity, placed, self.node_labels
        )
        ranked = np.array(scores, dtype=np.int64) if any(scores) else None
        return np.array(allowed, dtype=np.bool_), ranked
