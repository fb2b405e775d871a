"""Tolerances and sentinels every rule shares: one value each, so two checks of one rule cannot disagree.

Lowest in the tree (it imports nothing) so that the kernels, the scheduler,
the simulated fleet, scenarios and chaos checks can all read it. Numba
compiles these module-level floats into a kernel as constants; this module
is part of the digest that names the kernel cache (``muster.kernels.jit``).
"""

from __future__ import annotations

EPS = 1e-9
"""Slack in every comparison of summed shares and resources: float sums of fractions (0.1 + 0.2) must
not make a full device, a queue at its limit or a due time look one ulp over."""

UNLIMITED = -1.0
"""A queue's quota, limit or allocatable share that is not set (KAI's -1)."""
