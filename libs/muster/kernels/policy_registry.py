"""The placement policies by name: what the kernels in ``policies`` implement, without importing them.

The CLI lists these names (``muster bench openb --policy``, shell completion), which must not cost a
Numba import.
"""

from __future__ import annotations

from typing import NamedTuple

RANDOM, BESTFIT, PACKING, BINPACK, SPREAD, FGD, FGD_PACK = range(7)


class Policy(NamedTuple):
    """A registered placement policy."""

    name: str
    code: int
    needs_shapes: bool
    summary: str


POLICIES: dict[str, Policy] = {
    p.name: p
    for p in (
        Policy("random", RANDOM, False, "random feasible node, random fitting device"),
        Policy("bestfit", BESTFIT, False, "least leftover CPU+GPU (FGD paper baseline)"),
        Policy("packing", PACKING, False, "shared GPU, then used node, then small empty node"),
        Policy("binpack", BINPACK, False, "KAI binpack: fewest idle GPUs, most used device"),
        Policy("spread", SPREAD, False, "KAI spread: most idle fraction, idle device first"),
        Policy("fgd", FGD, True, "fragmentation gradient descent (Weng et al., ATC'23)"),
        Policy("fgd-pack", FGD_PACK, True, "ours: stranded + FGD measure, scarce-model cost"),
    )
}
DEFAULT_POLICY = "fgd-pack"
