"""The allocator's cluster state (``ClusterState``), a pure function of the events applied so far, and the
sections it is composed of: ``nodes``, the pod ``ledger``, ``queue_sums``, ``usage``, ``adoptions``.
``pods`` holds what a job and a pod are; ``planes`` is the one place a pod's resources enter, leave or
move between the used and releasing planes of the node arrays."""

from .cluster import SECTIONS, ClusterImage, ClusterState, StateImage
from .nodes import Node, NodeTable, Offer
from .pods import (
    ACTIVE,
    ALLOCATED,
    BINDING,
    BOUND,
    COMPLETED,
    HOLDING,
    PENDING,
    PIPELINED,
    RELEASING,
    STATE_NAMES,
    Job,
    PodReq,
    gpu_accounting,
    is_stale,
    leaf_counts,
    pod_req,
)
from .usage import decayed_seconds

__all__ = [
    "ACTIVE",
    "ALLOCATED",
    "BINDING",
    "BOUND",
    "COMPLETED",
    "HOLDING",
    "PENDING",
    "PIPELINED",
    "RELEASING",
    "SECTIONS",
    "STATE_NAMES",
    "ClusterImage",
    "ClusterState",
    "Job",
    "Node",
    "NodeTable",
    "Offer",
    "PodReq",
    "StateImage",
    "decayed_seconds",
    "gpu_accounting",
    "is_stale",
    "leaf_counts",
    "pod_req",
]
