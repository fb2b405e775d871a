"""How big a submission may be: the bounds that keep grouping finite on hostile input.

A manifest arrives from anyone who may submit, so the podgrouper (and the CLI,
which checks a manifest before publishing it) refuses, naming the field, what
would otherwise cost unbounded memory or time. The podgrouper's bounds live
here; those the bus enforces on every event come from ``muster.bounds``, so
whatever the podgrouper accepts and publishes, every reader admits:

- ``MAX_PODS``: pods in one workload, summed over its groups and documents; also
  the most groups, sub-groups or workflow steps one workload expands to. It is
  the bus's limit for one gang (``MAX_PODS_PER_GROUP``, 65,536: one pod per GPU
  on the largest clusters built); a count above it is a typo or an attack.
- ``MAX_DEPTH``: levels of nesting (mappings and lists) in one document, and of
  Argo templates calling templates. The bus takes ``MAX_NESTING`` levels under a
  submission's list of manifests, one of which is that list. Real manifests stay
  under 20; the bound keeps every recursive reader far from Python's limit.
- ``MAX_CREATED_DEPTH``: objects creating objects (an Argo Workflow's resource
  template creating a Workflow that creates a PyTorchJob is 3).
- ``MAX_YAML_NODES``: values in a YAML stream once its aliases are expanded, so
  a few lines of anchors cannot stand for billions of values.
"""

from __future__ import annotations

from muster.bounds import MAX_NESTING, MAX_PODS_PER_GROUP
from muster.grouping.errors import ManifestError

MAX_PODS = MAX_PODS_PER_GROUP
MAX_DEPTH = MAX_NESTING - 1
MAX_CREATED_DEPTH = 4
MAX_YAML_NODES = 1_000_000


def check_count(count: int, path: str, what: str = "pods") -> int:
    """``count`` itself, if a workload may have that many ``what``; else an error at ``path``."""
    if count > MAX_PODS:
        raise ManifestError(path, f"{count} {what} is more than the {MAX_PODS} a workload may have")
    return count
