"""What this machine offers: GPUs through NVML when the NVIDIA library is there, else as told.

CPU and memory come from the operating system unless given.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from muster import events as ev
from muster.agent.plan import AGENT_LABEL, AGENT_RUNTIMES, AGENT_VALUE
from muster.names import LABEL_VALUE, NODE, POOL, label_key_refusal

ADDRESS_LABEL = "muster.dev/address"
"""Where other machines reach this node's agent: MASTER_ADDR for gangs whose rank 0 runs here."""


@dataclass(frozen=True)
class Gpus:
    count: int
    memory: int
    """Bytes per device (the smallest, when they differ)."""
    model: str | None = None


def nvml_gpus() -> Gpus | None:
    """The machine's NVIDIA GPUs, or None when NVML is not available."""
    try:
        import pynvml  # type: ignore[import-not-found]
    except ImportError:
        return None
    try:
        pynvml.nvmlInit()
    except Exception:  # no driver, no device: the library raises its own error types
        return None
    try:
        count = pynvml.nvmlDeviceGetCount()
        if count == 0:
            return Gpus(0, 0)
        handles = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(count)]
        memory = min(int(pynvml.nvmlDeviceGetMemoryInfo(h).total) for h in handles)
        name = pynvml.nvmlDeviceGetName(handles[0])
        return Gpus(count, memory, name.decode() if isinstance(name, bytes) else str(name))
    finally:
        pynvml.nvmlShutdown()


def os_cpu_millicores() -> int:
    return (len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1) * 1000


def os_memory_bytes() -> int:
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


HOSTNAME_LABEL = "kubernetes.io/hostname"
"""The label the kubelet gives every node, its name: the usual ``topologyKey`` of a pod anti-affinity
that keeps pods one per node. An agent's node has it too (a ``--label`` of that key wins)."""


def node_spec(
    name: str,
    *,
    pool: str,
    labels: dict[str, str],
    gpus: Gpus,
    cpu: int | None = None,
    memory: int | None = None,
    address: str | None = None,
    taints: list[ev.Taint] | None = None,
) -> ev.NodeSpec:
    """The node an agent registers: its resources, its labels (``kubernetes.io/hostname`` its name unless
    given), the label that marks it an agent's, and what it runs.

    Raises ``ValueError`` naming ``--node``, ``--pool``, ``--label`` or ``--taint`` for a name Kubernetes
    would refuse."""
    refusals = [("--node", NODE.refusal(name)), ("--pool", POOL.refusal(pool))]
    for key, value in labels.items():
        refusals += [("--label", label_key_refusal(key)), ("--label", LABEL_VALUE.refusal(value))]
    for taint in taints or ():
        refusals += [("--taint", label_key_refusal(taint.key)), ("--taint", LABEL_VALUE.refusal(taint.value))]
    for flag, why in refusals:
        if why is not None:
            raise ValueError(f"{flag}: {why}")
    return ev.NodeSpec(
        name=name,
        pool=pool,
        labels={HOSTNAME_LABEL: name, **labels, AGENT_LABEL: AGENT_VALUE, ADDRESS_LABEL: address or name},
        resources=ev.Resources(
            gpu=float(gpus.count),
            gpu_memory=gpus.memory,
            cpu=os_cpu_millicores() if cpu is None else cpu,
            memory=os_memory_bytes() if memory is None else memory,
        ),
        gpu_model=gpus.model,
        runtimes=list(AGENT_RUNTIMES),
        taints=list(taints or []),
    )
