"""``muster group FILE [--json]``: what the podgrouper makes of a manifest, without a bus."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from muster.events import PodGroupCreated


def register(sub: Any) -> None:
    """Add the ``group`` subcommand to an argparse subparsers object."""
    parser = sub.add_parser(
        "group",
        description="Group a Kubernetes-style manifest (several documents separated by --- belong "
        "together) the way the podgrouper does, without a running system.",
    )
    parser.add_argument("file", metavar="FILE", help="YAML or JSON manifest")
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    parser.set_defaults(run=_run)


def _number(value: float) -> int | float:
    return int(value) if float(value).is_integer() else value


def _topology_json(topo: Any) -> dict[str, Any]:
    """A constraint as ``{"topology": {name, required, preferred}}`` (label keys; name None for plain node
    labels), or nothing when there is none: an addition to cli.md's shape, so output without constraints
    reads as before."""
    if topo is None:
        return {}
    return {"topology": {"name": topo.name, "required": topo.required, "preferred": topo.preferred}}


def _subgroups_json(event: PodGroupCreated) -> list[dict[str, Any]]:
    """Flat sub-groups as name and min_available; those of a tree with their parent and either
    min_available (a leaf) or min_subgroup (a parent), as cli.md says; each with its own constraint."""
    parents = {s.parent for s in event.subgroups if s.parent is not None}
    if not parents and event.min_subgroup is None and all(s.min_subgroup is None for s in event.subgroups):
        return [
            {"name": s.name, "min_available": s.min_available} | _topology_json(s.topology)
            for s in event.subgroups
        ]
    return [
        {"name": s.name, "parent": s.parent}
        | ({"min_subgroup": s.min_subgroup} if s.name in parents else {"min_available": s.min_available})
        | _topology_json(s.topology)
        for s in event.subgroups
    ]


def _resources_json(r: Any) -> dict[str, Any]:
    """gpu, cpu (cores) and memory as cli.md shows them; a shared GPU's memory and each extended resource
    (``rdma/ib``, ...) by their own names when the pod asks for them, so nothing it asks for is hidden."""
    out: dict[str, Any] = {"gpu": _number(r.gpu), "cpu": _number(r.cpu / 1000), "memory": r.memory}
    if r.gpu_memory:
        out["gpu_memory"] = r.gpu_memory
    out.update(sorted(r.extended.items()))
    return out


def group_json(event: PodGroupCreated) -> dict[str, Any]:
    """One group in cli.md's ``muster group --json`` shape."""
    out = {
        "name": event.name,
        "kind": event.kind,
        "queue": event.queue,
        "priority_class": event.priority_class,
        "priority": event.priority,
        "preemptible": event.preemptible,
        "min_available": event.min_available,
        "runtime": event.runtime,
        "pods_total": sum(p.count for p in event.pods),
        "subgroups": _subgroups_json(event),
        "pods": [
            {
                "role": p.role,
                "count": p.count,
                "resources": _resources_json(p.resources),
            }
            for p in event.pods
        ],
    }
    if event.min_subgroup is not None:
        out["min_subgroup"] = event.min_subgroup
    out.update(_topology_json(event.topology))
    return out


def _resources_text(pod: Any) -> str:
    r = pod.resources
    parts = []
    if r.gpu:
        parts.append(f"gpu {_number(r.gpu)}")
    if r.gpu_memory:
        parts.append(f"gpu-memory {r.gpu_memory / 2**20:g}Mi")
    parts.append(f"cpu {_number(r.cpu / 1000)}")
    parts.append(f"memory {r.memory / 2**30:.3g}Gi" if r.memory else "memory 0")
    parts += [f"{k} {v}" for k, v in sorted(r.extended.items())]
    return ", ".join(parts)


def _topology_text(topo: Any) -> str:
    named = f" of {topo.name} ({' > '.join(topo.levels)})" if topo.name else ""
    return f"topology{named}: required={topo.required} preferred={topo.preferred}"


def _text(events: list[PodGroupCreated]) -> str:
    from muster import placement_predicates as predicates
    from muster import pod_affinity

    lines = []
    for e in events:
        preempt = "preemptible" if e.preemptible else "non-preemptible"
        total = sum(p.count for p in e.pods)
        lines.append(f"{e.name}  ({e.kind})")
        lines.append(
            f"  queue {e.queue}, pool {e.pool}, priority {e.priority_class} ({e.priority}), {preempt}"
        )
        lines.append(f"  gang: {e.min_available} of {total} pods")
        lines.append(f"  runtime: {e.runtime} (only nodes that run {e.runtime} pods take them)")
        if e.min_subgroup is not None:
            lines.append(f"  sub-groups needed: {e.min_subgroup}")
        parents = {s.parent for s in e.subgroups if s.parent is not None}
        for s in e.subgroups:
            under = f" (in {s.parent})" if s.parent else ""
            if s.name in parents:
                need = "all" if s.min_subgroup is None else s.min_subgroup
                lines.append(f"  sub-group {s.name}{under}: needs {need} of its sub-groups")
            else:
                lines.append(f"  sub-group {s.name}{under}: min {s.min_available}")
            if s.topology is not None:
                lines.append(f"    {_topology_text(s.topology)}")
        for p in e.pods:
            extra = f" [{p.subgroup}]" if p.subgroup else ""
            selector = f" on {p.node_selector}" if p.node_selector else ""
            lines.append(f"  {p.count} x {p.role}{extra}: {_resources_text(p)}{selector}")
            if p.tolerations:
                lines.append("    tolerates " + ", ".join(map(predicates.describe_toleration, p.tolerations)))
            if p.node_affinity:
                lines.append(
                    "    requires a node with " + " or ".join(map(predicates.describe_term, p.node_affinity))
                )
            if p.pod_affinity:
                lines.append(
                    "    goes beside " + " and ".join(map(pod_affinity.describe_term, p.pod_affinity))
                )
            for w in p.preferred_pod_affinity:
                lines.append(
                    f"    prefers beside {pod_affinity.describe_term(w.pod_affinity_term)} (weight {w.weight})"
                )
            for w in p.preferred_pod_anti_affinity:
                lines.append(
                    f"    prefers apart from {pod_affinity.describe_term(w.pod_affinity_term)} (weight {w.weight})"
                )
            if p.pod_anti_affinity:
                lines.append(
                    "    keeps apart from "
                    + " or ".join(map(pod_affinity.describe_term, p.pod_anti_affinity))
                )
        if e.topology is not None:
            lines.append(f"  {_topology_text(e.topology)}")
        if e.preemption_delay:
            lines.append(f"  preemption delay: {_number(e.preemption_delay)}s after creation or an eviction")
        if e.stale_gang_grace is not None:
            never = " (never evicted when stale)" if e.stale_gang_grace < 0 else ""
            lines.append(f"  stale-gang grace: {_number(e.stale_gang_grace)}s{never}")
    return "\n".join(lines)


def _load(path: str) -> list[dict[str, Any]]:
    from muster.grouping.nesting import load_yaml_documents

    with open(path, encoding="utf-8") as handle:
        return load_yaml_documents(handle.read())


def _run(args: argparse.Namespace) -> int:
    import yaml

    from muster.grouping.errors import ManifestError
    from muster.grouping.group import group_manifests

    try:
        docs = _load(args.file)
        events = group_manifests(docs)
    except ManifestError as exc:
        print(f"{args.file}: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"{args.file}: cannot read: {exc.strerror or exc}", file=sys.stderr)
        return 2
    except yaml.YAMLError as exc:
        print(f"{args.file}: not valid YAML: {exc}", file=sys.stderr)
        return 2
    except UnicodeDecodeError as exc:
        print(f"{args.file}: not UTF-8 text: {exc.reason} at byte {exc.start}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps({"groups": [group_json(e) for e in events]}, indent=2))
    else:
        print(_text(events))
    return 0
