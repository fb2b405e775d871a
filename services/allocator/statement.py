"""A statement: tentative placements for one job, committed together or undone (KAI's statement.go)."""

from __future__ import annotations

import numpy as np
from muster import events as ev
from muster.kernels import placement as pl

from .session import Session
from .state import Job


class Statement:
    """Placements applied to the session's node arrays at once, turned into decisions only on commit."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self.ops: list[tuple[Job, list[int], pl.PodArrays, pl.Placement]] = []

    def place(self, job: Job, pods: list[int], restrict: np.ndarray | None = None) -> pl.Placement:
        """Place ``pods`` of ``job`` greedily; a partial result stays applied until rollback or discard."""
        s = self.session
        arrays = s.pod_arrays(job, pods, restrict=restrict)
        result = pl.place(
            s.nodes, arrays, s.config.placement_gpu, s.config.placement_cpu, index=s.gpu_index()
        )
        self.ops.append((job, pods, arrays, result))
        return result

    def checkpoint(self) -> int:
        return len(self.ops)

    def rollback(self, checkpoint: int) -> None:
        """Undo every placement made after ``checkpoint``, newest first."""
        s = self.session
        while len(self.ops) > checkpoint:
            _, _, arrays, result = self.ops.pop()
            pl.unplace(s.nodes, arrays, result, index=s.gpu_index())

    def discard(self) -> None:
        self.rollback(0)

    def placements(self) -> list[tuple[Job, int, int, tuple[int, ...], float, bool]]:
        """(job, pod, node slot, devices, share, pipelined) of every pod placed, in order."""
        out = []
        for job, pods, _, result in self.ops:
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

    def commit(self, pipeline_all: bool = False, placements: list | None = None) -> int:
        """Turn the placements into BindRequested decisions and charge the queues; returns binds."""
        s = self.session
        n = 0
        for job, pod, slot, devs, share, pipelined in (
            placements if placements is not None else self.placements()
        ):
            node_name = s.slot_names[slot]
            spec = s.state.nodes[node_name].spec
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
