"""MIG profiles: what a Multi-Instance GPU instance is called, and how many GPUs it counts for.

A GPU in MIG mode is cut into instances; a node offers each profile as a countable resource
(``nvidia.com/mig-1g.10gb: 7``) and a pod asks for instances of one the same way. The name says how
many of the GPU's compute slices an instance has (``<g>g``) and its memory (``<m>gb``). KAI counts
each instance as **g GPUs** against quota, not as a fraction of a device (kai-semantics §17;
``resource_info.GetGpusQuota``, ``ExtractGpuAndMemoryFromMigResourceName``): ``mig-1g.10gb`` is 1,
``mig-3g.40gb`` is 3, ``mig-7g.80gb`` is 7, and the cluster's GPU total counts node MIG capacity
the same way. Where a pod may run is the extended-resource rule: only on a node that has enough
instances of its profile free.

KAI's node predicate also sorts pods by what they ask for (``node_info.PredicateByNodeResourcesType``):
on a MIG-enabled node labelled ``nvidia.com/mig.strategy: mixed`` only MIG pods run, on one labelled
``single`` (its instances shown as whole GPUs) only whole-GPU pods; no MIG pod runs on a node that is
not MIG-enabled. CPU-only pods run anywhere (``node_admits``).

This is the one home of these rules: the allocator's pod requests (``scheduler/state/pods.py``), node
totals and eligible nodes, the scenario loader and the pod-grouper all ask it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

PREFIX = "nvidia.com/mig-"
"""Every MIG resource name starts so (KAI's ``IsMigResource``)."""
ENABLED_LABEL = "node-role.kubernetes.io/mig-enabled"
"""A node label saying whether the node is MIG-enabled (KAI's default ``MIGWorkerNodeLabelKey``); without it
a node is MIG-enabled when it offers some MIG instance."""
STRATEGY_LABEL = "nvidia.com/mig.strategy"
"""The GPU operator's MIG strategy of a node: ``mixed`` or ``single`` (anything else: none)."""

# What a pod asks for, as KAI's node predicate tells pods apart.
CPU_ONLY, REGULAR, SHARED, MIG = "", "regular", "shared", "mig"
_GO_TRUE = ("1", "t", "T", "TRUE", "true", "True")

_PROFILE = re.compile(r"nvidia\.com/mig-([0-9]+)g\.([0-9]+)gb")
SPELLING = "nvidia.com/mig-<g>g.<m>gb"


class MigError(ValueError):
    """A resource named like a MIG profile that muster cannot count; ``name`` is the resource."""

    def __init__(self, name: str, message: str) -> None:
        super().__init__(f"{name}: {message}")
        self.name = name
        self.message = message


def is_profile(name: str) -> bool:
    """Whether ``name`` is a MIG resource (well formed or not)."""
    return name.startswith(PREFIX)


def slices(name: str) -> int:
    """The compute slices (g) of one instance of MIG profile ``name``; raises ``MigError`` for a name
    under ``nvidia.com/mig-`` that does not say them (KAI would count such an instance as 0 GPUs and
    log an error; muster refuses it where it enters)."""
    found = _PROFILE.fullmatch(name)
    if found is None:
        raise MigError(name, f"not a MIG profile muster can count: expected {SPELLING}")
    g = int(found.group(1))
    if g < 1:
        raise MigError(name, "a MIG instance has at least one compute slice")
    return g


def gpus(extended: Mapping[str, int | float]) -> int:
    """The GPUs the MIG instances among ``extended`` (resource name -> count) count for: g per instance.
    A malformed profile counts nothing, as in KAI (``check`` refuses it at the door)."""
    total = 0
    for name, count in extended.items():
        if name.startswith(PREFIX) and count:
            try:
                total += slices(name) * int(count)
            except MigError:
                continue
    return total


def pod_gpus(gpu: float, extended: Mapping[str, int | float]) -> float:
    """The GPUs a pod asking for ``gpu`` (devices, or a fraction of one) and ``extended`` counts for against
    quota, before its node is known: its devices plus g per MIG instance. (A gpu-memory pod's share depends
    on the device it lands on: ``scheduler/state/pods.py`` ``gpu_accounting``.)"""
    return float(gpu) + gpus(extended)


def gpus_per_instance(names: list[str]) -> list[int]:
    """For each resource in ``names`` (a node table's extended columns), the GPUs one unit of it counts
    for: g for a MIG profile, 0 for anything else."""
    return [gpus({name: 1}) for name in names]


def check(extended: Mapping[str, int | float]) -> None:
    """Raise ``MigError`` for the first (by name) MIG resource among ``extended`` that cannot be counted."""
    for name in sorted(extended):
        if name.startswith(PREFIX):
            slices(name)


def check_request(gpu: float, gpu_memory: int, extended: Mapping[str, int | float]) -> None:
    """Raise ``MigError`` for a pod request muster cannot honour: a malformed profile, or MIG instances
    asked together with GPUs or GPU memory (a pod is a MIG pod or a GPU pod; KAI's node predicate
    sorts nodes by that, and muster does not guess which the pod meant)."""
    check(extended)
    if gpu or gpu_memory:
        for name in sorted(extended):
            if name.startswith(PREFIX) and extended[name]:
                raise MigError(name, "a pod asks for MIG instances or for GPUs (gpu, gpu_memory), not both")


def request_type(whole: bool, shared: bool, extended_names: Iterable[str]) -> str:
    """What a pod asks for: ``MIG`` instances, ``REGULAR`` whole GPUs (``whole``), a ``SHARED`` device (a
    fraction or GPU memory), or nothing (``CPU_ONLY``)."""
    if any(name.startswith(PREFIX) for name in extended_names):
        return MIG
    if whole:
        return REGULAR
    return SHARED if shared else CPU_ONLY


def node_admits(labels: Mapping[str, str], extended: Mapping[str, int], request: str) -> bool:
    """Whether a node with ``labels`` offering ``extended`` may take a pod of ``request`` type (KAI's
    ``PredicateByNodeResourcesType``): a MIG pod needs a MIG-enabled node; a MIG-enabled node of strategy
    ``mixed`` takes only MIG pods and one of strategy ``single`` only whole-GPU pods."""
    if request == CPU_ONLY:
        return True
    label = labels.get(ENABLED_LABEL)
    if label is not None:
        # Go's strconv.ParseBool; a value it cannot read is "not enabled"
        enabled = label in _GO_TRUE
    else:
        enabled = any(name.startswith(PREFIX) and count > 0 for name, count in extended.items())
    if not enabled:
        return request != MIG
    strategy = labels.get(STRATEGY_LABEL)
    if strategy == "single":
        return request == REGULAR
    if strategy == "mixed":
        return request == MIG
    return True
