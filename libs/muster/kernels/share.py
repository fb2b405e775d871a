"""What part of a GPU a pod asks for: its kind, and its share of one device.

The one home of the rule, for the allocator's kernels and for Python alike
(the simulated fleet, accounting, policies). A pod asks for one of:

* nothing (``CPU_ONLY``);
* whole devices (``WHOLE``): ``gpu`` of 1 or more, a whole number;
* a fraction of one device (``FRACTION``): ``0 < gpu < 1``, its share is ``gpu``;
* memory of one device (``MEMORY``): ``gpu_memory`` bytes, its share is
  ``gpu_memory`` over the memory of the device it lands on, so it is known
  only on a node that states its device memory.

Asking for both ``gpu`` and ``gpu_memory`` is refused, as KAI's admission
does ("cannot request both GPU and GPU memory"): which of the two the pod
meant cannot be told, and taking either would let the fleet and the
allocator hold different shares of the same device.
"""

from __future__ import annotations

from muster.kernels.jit import njit

# pod kinds
CPU_ONLY = 0
WHOLE = 1
FRACTION = 2
MEMORY = 3

UNKNOWN_SHARE = -1.0
"""``device_share`` of a gpu-memory pod on a node that does not state its device memory."""


def pod_kind(gpu: float, gpu_memory: int) -> int:
    """CPU_ONLY, WHOLE, FRACTION or MEMORY for a pod's gpu request; raises ValueError if invalid."""
    if gpu_memory > 0:
        if gpu > 0:
            raise ValueError("gpu_memory: a pod asks for either gpu or gpu_memory, not both")
        return MEMORY
    if gpu <= 0:
        return CPU_ONLY
    if gpu < 1:
        return FRACTION
    if gpu != int(gpu):
        raise ValueError(f"gpu: a request above 1 must be a whole number of devices, got {gpu}")
    return WHOLE


@njit(cache=True)
def device_share(kind, fraction, gpu_memory, device_memory):
    """The share of one device a pod of ``kind`` holds on a node whose devices have ``device_memory`` bytes:
    ``fraction`` for a FRACTION pod, memory over device memory for a MEMORY pod (``UNKNOWN_SHARE`` when the
    node states none), 0 for pods that hold whole devices or none."""
    if kind == FRACTION:
        return fraction
    if kind != MEMORY:
        return 0.0
    if device_memory <= 0:
        return UNKNOWN_SHARE
    return gpu_memory / device_memory
