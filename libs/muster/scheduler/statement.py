"""A statement: tentative placements and evictions for one job, committed together or undone (KAI's statement.go)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from muster import events as ev
from muster.kernels import placement as pl

from .pod_affinity_view import PodAffinityView
from .policy_placement import pod_seed
from .session import Session
from .state import Job


@dataclass(frozen=True, slots=True)
class Eviction:
    """Why a pod is evicted: the action, the job it makes room for, the rule that allowed it."""

    action: str
    for_job: str | None
    reason: str


class Statement:
    """Placements and evictions applied to the session's working state at once, turned into decisions only
    on commit. Operations are undone newest first."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self.ops: list[tuple] = []

    def place(
        self,
        job: Job,
        pods: list[int],
        restrict: np.ndarray | None = None,
        releasing_first: bool = False,
        ranks: np.ndarray | None = None,
    ) -> pl.Placement:
        """Place ``pods`` of ``job`` greedily; a partial result stays applied until rollback or discard.
        ``releasing_first``: whole-GPU pods take releasing devices before idle ones (see ``pl.place``).
        A job under pod (anti-)affinity is placed one pod at a time, each on the nodes those rules leave
        it after the pods placed before it (``PodAffinityView``). ``ranks``: per node slot, the topology
        preferred-level score of these pods (``topology.preferred_scores``); they too then go one at a
        time, each on the best-ranked nodes it fits."""
        view = self.session.pod_affinity()
        if view is not None and pods and view.constrained(job):
            return self._place_each(job, pods, restrict, releasing_first, view, ranks)
        if (
            ranks is not None
            and pods
            and np.unique(ranks if restrict is None else ranks[restrict]).shape[0] > 1
        ):
            return self._place_each(job, pods, restrict, releasing_first, None, ranks)
        return self._place(job, pods, restrict, releasing_first)

    def _place_each(
        self,
        job: Job,
        pods: list[int],
        restrict: np.ndarray | None,
        releasing_first: bool,
        view: PodAffinityView | None,
        ranks: np.ndarray | None,
    ) -> pl.Placement:
        results = []
        for i in pods:
            if view is None:
                mask = np.ones(ranks.shape[0], dtype=np.bool_) if restrict is None else restrict.copy()
                scores = None
            else:
                pending = [(j, pod, slot) for j, pod, slot, *_ in self.placements()]
                mask, scores = view.mask(job, i, pending)
                if restrict is not None:
                    mask &= restrict[: mask.shape[0]]
            got = self._place_ranked(job, i, mask, _combined(scores, ranks), releasing_first)
            results.append(got)
            if got.count == 0:
                break
        count = sum(r.count for r in results)
        return pl.Placement(
            count,
            np.concatenate([r.node[: r.count] for r in results]),
            np.concatenate([r.devices[: r.count] for r in results]),
            np.concatenate([r.share[: r.count] for r in results]),
            np.concatenate([r.pipelined[: r.count] for r in results]),
        )

    def _place_ranked(
        self, job: Job, pod: int, mask: np.ndarray, scores: np.ndarray | None, releasing_first: bool
    ) -> pl.Placement:
        """One pod on the nodes of ``mask``: those of the best score first (KAI adds the preferred
        affinity and topology scores above every other it gives), then the next best, and so on."""
        if scores is None:
            return self._place(job, [pod], mask, releasing_first)
        got = None
        for score in sorted(set(scores[mask].tolist()), reverse=True):
            got = self._place(job, [pod], mask & (scores == score), releasing_first)
            if got.count:
                return got
        return got if got is not None else self._place(job, [pod], mask, releasing_first)

    def _place(
        self, job: Job, pods: list[int], restrict: np.ndarray | None, releasing_first: bool
    ) -> pl.Placement:
        s = self.session
        arrays = s.pod_arrays(job, pods, restrict=restrict)
        placer = s.policy_placer()
        if placer is None:
            result = pl.place(
                s.nodes,
                arrays,
                s.config.placement_gpu,
                s.config.placement_cpu,
                index=s.gpu_index(),
                releasing_first=releasing_first,
            )
            s.nodes_version += 1
        else:
            seeds = [pod_seed(s.cycle, job.name, i) for i in pods] if placer.random else [0] * len(pods)
            result = placer.place(
                s.nodes, arrays, s.gpu_index(), s.config.placement_cpu, seeds, releasing_first
            )
            s.nodes_version += 1
            placer.version = s.nodes_version  # its view followed each pod it placed
        self.ops.append(("place", job, pods, arrays, result))
        return result

    def evict(self, job: Job, pod: int, why: Eviction) -> None:
        """Evict a running pod: its resources become releasing (others may be pipelined onto them)."""
        self.session.shift(job, pod, +1)
        self.ops.append(("evict", job, pod, why))

    def checkpoint(self) -> int:
        return len(self.ops)

    def rollback(self, checkpoint: int) -> None:
        """Undo every operation made after ``checkpoint``, newest first."""
        s = self.session
        while len(self.ops) > checkpoint:
            op = self.ops.pop()
            if op[0] == "place":
                _, _, _, arrays, result = op
                pl.unplace(s.nodes, arrays, result, index=s.gpu_index())
                s.nodes_version += 1
            else:
                s.shift(op[1], op[2], -1)

    def discard(self) -> None:
        self.rollback(0)

    def evictions(self) -> list[tuple[Job, int, Eviction]]:
        """(job, pod, why) of every eviction, in order."""
        return [(op[1], op[2], op[3]) for op in self.ops if op[0] == "evict"]

    def placements(self) -> list[tuple[Job, int, int, tuple[int, ...], float, bool]]:
        """(job, pod, node slot, devices, share, pipelined) of every pod placed, in order."""
        out = []
        for op in self.ops:
            if op[0] != "place":
                continue
            _, job, pods, _, result = op
            k = result.count
            # one conversion per result: element access on numpy arrays costs more than the loop
            nodes = result.node[:k].tolist()
            devices = result.devices[:k].tolist()
            shares = result.share[:k].tolist()
            piped = result.pipelined[:k].tolist()
            for row in range(k):
                devs = tuple(d for d in devices[row] if d >= 0)
                out.append((job, pods[row], nodes[row], devs, shares[row], piped[row]))
        return out

    def commit(
        self,
        pipeline_all: bool = False,
        placements: list | None = None,
        reasons: dict[str, Eviction] | None = None,
    ) -> int:
        """Turn the evictions, then the placements, into decisions and charge the queues; returns binds.

        ``reasons`` overrides the recorded reason per victim job name."""
        s = self.session
        for job, pod, why in self.evictions():
            why = (reasons or {}).get(job.name, why)
            node_name = s.slot_names[job.node[pod]] or ""
            s.decisions.append(
                ev.EvictionRequested(
                    job=job.name,
                    pod=pod,
                    node=node_name,
                    pool=job.pool,
                    cycle=s.cycle,
                    epoch=s.epoch,
                    action=why.action,
                    for_job=why.for_job,
                    reason=why.reason,
                )
            )
        n = 0
        for job, pod, slot, devs, share, pipelined in (
            placements if placements is not None else self.placements()
        ):
            node_name = s.slot_names[slot]
            spec = s.state.node_table.nodes[node_name].spec
            pipelined = pipelined or pipeline_all
            s.placed.setdefault(job.name, {})[pod] = (slot, devs, share, pipelined)
            s.charge(job, s.placed_accounting(job, pod, slot))
            s.decisions.append(
                ev.BindRequested(
                    job=job.name,
                    pod=pod,
                    node=node_name,
                    gpus=list(devs),
                    gpu_share=share,
                    pool=spec.pool,
                    cycle=s.cycle,
                    epoch=s.epoch,
                    pipelined=pipelined,
                )
            )
            n += 1
        self.ops = []
        return n


PREFERRED_AFFINITY_SCORE = 1_000_000
"""KAI's node score per unit of a pod's raw preferred pod (anti-)affinity score (§5.3, v0.17's ×10)."""


def _combined(affinity: np.ndarray | None, ranks: np.ndarray | None) -> np.ndarray | None:
    """Preferred pod affinity and topology preferred-level scores added as KAI adds them (§5.3)."""
    if affinity is None:
        return ranks
    if ranks is None:
        return affinity
    return affinity * PREFERRED_AFFINITY_SCORE + ranks  # both per node slot of the session
