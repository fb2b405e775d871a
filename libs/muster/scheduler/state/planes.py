"""What a pod holds on its node, in the planes of ``NodeArrays``: the one place it is added, taken away
or moved between the used and the releasing plane.

The cluster state calls these as events arrive; a session calls ``move`` on its working copy of the arrays
when it evicts a pod (and again, reversed, when a statement undoes that).

A device's share drops to zero once below ``EPS``, so float crumbs of fractions that left it do not keep
it from looking idle.
"""

from __future__ import annotations

from muster.kernels import placement as pl
from muster.tolerances import EPS

from .pods import PodReq

_CPU = {pl.D_USED: pl.N_CPU_USED, pl.D_REL: pl.N_CPU_REL}
_MEM = {pl.D_USED: pl.N_MEM_USED, pl.D_REL: pl.N_MEM_REL}
_EXT = {pl.D_USED: pl.E_USED, pl.D_REL: pl.E_REL}


def hold(
    nodes: pl.NodeArrays,
    ext_names: list[str],
    req: PodReq,
    slot: int,
    gpus: tuple[int, ...],
    share: float,
    plane: int,
    sign: int,
) -> None:
    """Add (sign 1) or take away (sign -1) what a pod holds on node ``slot`` in ``plane`` (used or
    releasing): its cpu, memory, extended resources and devices (whole ones, or ``share`` of the first)."""
    ints, dev, ext = nodes
    ints[slot, _CPU[plane]] += sign * req.cpu
    ints[slot, _MEM[plane]] += sign * req.memory
    eplane = _EXT[plane]
    for name, amount in req.ext:
        if name in ext_names:
            ext[eplane, slot, ext_names.index(name)] += sign * amount
    if req.kind == pl.WHOLE:
        amount, devices = 1.0, gpus
    elif req.kind in (pl.FRACTION, pl.MEMORY):
        amount, devices = share, gpus[:1]
    else:
        return
    g = dev.shape[2]
    for d in devices:
        # a device index from the log is not trusted to exist on the node
        if 0 <= d < g:
            v = dev[plane, slot, d] + sign * amount
            dev[plane, slot, d] = 0.0 if v < EPS else v


def move(
    nodes: pl.NodeArrays,
    ext_names: list[str],
    req: PodReq,
    slot: int,
    gpus: tuple[int, ...],
    share: float,
    sign: int,
) -> None:
    """Move what a pod holds on node ``slot`` from the used plane to the releasing one (sign 1: it is
    being evicted) or back (sign -1: the eviction undone)."""
    hold(nodes, ext_names, req, slot, gpus, share, pl.D_USED, -sign)
    hold(nodes, ext_names, req, slot, gpus, share, pl.D_REL, sign)


def mark_shared(nodes: pl.NodeArrays, req: PodReq, slot: int, gpus: tuple[int, ...], sign: int) -> None:
    """Count (sign 1) or uncount (sign -1) a fractional or gpu-memory pod on the device it shares."""
    if req.kind in (pl.FRACTION, pl.MEMORY) and gpus:
        d = gpus[0]
        dev = nodes.dev
        if 0 <= d < dev.shape[2]:
            dev[pl.D_FRAC, slot, d] = max(0.0, dev[pl.D_FRAC, slot, d] + sign)
