"""Grove PodCliqueSet (and its older name PodGangSet): one gang per PodGang.

Grove makes, per PodCliqueSet replica ``r``, a base PodGang ``<pcs>-<r>`` holding
every standalone clique and the first ``minAvailable`` replicas (default 1) of
each scaling group; each further scaling-group replica gets its own PodGang
``<pcs>-<r>-<group>-<i>``. KAI turns a PodGang into a group whose sub-groups are
its cliques (``minReplicas`` = the clique's ``minAvailable``, defaulting to its
``replicas``) and whose min_available is their sum. The PodGang's priority class
(the template's ``priorityClassName``) wins over the default; a
``priorityClassName`` label on the PodCliqueSet wins over both.
"""

from __future__ import annotations

from typing import Any

from muster.events import SubGroup
from muster.grouping.errors import ManifestError
from muster.grouping.fields import as_map, get_count, get_int, get_list, get_str, join, require_map
from muster.grouping.limits import check_count
from muster.grouping.model import Context, Draft, Meta, PodTemplate, pod_template
from muster.pod_constraints import NOT_HONOURED

_TOPOLOGY = (
    "a Grove topologyConstraint's pack domain names a level of Grove's ClusterTopology, which muster has "
    "no way to resolve to a node label or a KAI Topology level; use the kai.scheduler/topology annotations "
    "on the PodCliqueSet"
)
_SHARING = "shared dynamic resource claims (DRA) are not counted or placed"


def _refuse_unhonoured(obj: dict[str, Any], path: str) -> None:
    """Refuse by name what would change where Grove's pods run and muster cannot honour (never drop it):
    topology constraints at any level (the PodGang's pack constraints and Grove's parent sub-groups)
    and DRA resource sharing."""
    if obj.get("topologyConstraint"):
        raise ManifestError(join(path, "topologyConstraint"), f"{NOT_HONOURED}: {_TOPOLOGY}")
    for key in ("resourceClaimTemplates", "resourceSharing"):
        if obj.get(key):
            raise ManifestError(join(path, key), f"{NOT_HONOURED}: {_SHARING}")


def _cliques(template: dict[str, Any], tpath: str) -> dict[str, tuple[int, PodTemplate]]:
    out: dict[str, tuple[int, PodTemplate]] = {}
    for i, raw in enumerate(get_list(template, "cliques", tpath)):
        cpath = join(join(tpath, "cliques"), i)
        clique = as_map(raw, cpath)
        name = get_str(clique, "name", cpath)
        if not name:
            raise ManifestError(join(cpath, "name"), "required field is missing")
        _refuse_unhonoured(clique, cpath)
        spath = join(cpath, "spec")
        spec = require_map(clique, "spec", cpath)
        _refuse_unhonoured(spec, spath)
        replicas = get_count(spec, "replicas", spath, 1)
        minimum = get_int(spec, "minAvailable", spath, replicas)
        if minimum is None or minimum <= 0:
            raise ManifestError(join(spath, "minAvailable"), f"must be positive, got {minimum}")
        check_count(minimum, join(spath, "minAvailable"))
        pods = pod_template(
            require_map(spec, "podSpec", spath),
            join(spath, "podSpec"),
            role=name,
            count=replicas,
            spec_key=None,
        )
        out[name] = (minimum, pods)
    if not out:
        raise ManifestError(join(tpath, "cliques"), "needs at least one clique")
    return out


def _scaling_groups(template: dict[str, Any], tpath: str, cliques) -> list[tuple[str, list[str], int, int]]:
    out = []
    for i, raw in enumerate(get_list(template, "podCliqueScalingGroups", tpath)):
        gpath = join(join(tpath, "podCliqueScalingGroups"), i)
        group = as_map(raw, gpath)
        _refuse_unhonoured(group, gpath)
        name = get_str(group, "name", gpath) or f"sg-{i}"
        members = [str(c) for c in get_list(group, "cliqueNames", gpath)]
        for j, member in enumerate(members):
            if member not in cliques:
                raise ManifestError(join(join(gpath, "cliqueNames"), j), f"no clique named {member!r}")
        replicas = get_count(group, "replicas", gpath, 1)
        minimum = get_count(group, "minAvailable", gpath, 1)
        out.append((name, members, replicas, min(minimum, replicas)))
    return out


def group_podcliqueset(obj: dict[str, Any], path: str, meta: Meta, ctx: Context) -> list[Draft]:
    spath = join(path, "spec")
    spec = require_map(obj, "spec", path)
    tpath = join(spath, "template")
    template = require_map(spec, "template", spath)
    _refuse_unhonoured(template, tpath)
    cliques = _cliques(template, tpath)
    scaling = _scaling_groups(template, tpath, cliques)
    in_groups = {member for _, members, _, _ in scaling for member in members}
    priority = meta.labels.get("priorityClassName") or get_str(template, "priorityClassName", tpath) or None
    drafts = []

    def gang(name: str, parts: list[tuple[str, str]]) -> Draft:
        subgroups = tuple(SubGroup(name=f"{name}-{label}", min_available=cliques[c][0]) for label, c in parts)
        pods = tuple(cliques[c][1].with_pod(subgroup=f"{name}-{label}") for label, c in parts)
        return Draft(
            name=name,
            kind=meta.kind,
            top=meta,
            owners=(meta,),
            pods=pods,
            min_available=sum(s.min_available for s in subgroups),
            subgroups=subgroups,
            priority_class=priority,
        )

    # Each replica repeats every clique outside a scaling group once and each scaling group's
    # cliques once per scaling replica: bound that before building any of it.
    where = join(tpath, "podCliqueScalingGroups" if scaling else "cliques")
    pods_each = sum(cliques[c][1].pod.count for c in cliques if c not in in_groups)
    parts_each = sum(1 for c in cliques if c not in in_groups)
    for _, members, replicas, _ in scaling:
        pods_each += check_count(replicas * sum(cliques[c][1].pod.count for c in members), where)
        parts_each += check_count(replicas * len(members), where, "sub-groups")
    check_count(pods_each, where)
    check_count(parts_each, where, "sub-groups")
    copies = get_count(spec, "replicas", spath, 1)
    check_count(copies * pods_each, join(spath, "replicas"))
    check_count(copies * parts_each, join(spath, "replicas"), "sub-groups")
    for r in range(copies):
        base = f"{meta.name}-{r}"
        parts = [(c, c) for c in cliques if c not in in_groups]
        for group, members, _, minimum in scaling:
            parts += [(f"{group}-{j}-{c}", c) for j in range(minimum) for c in members]
        drafts.append(gang(base, parts))
        for group, members, replicas, minimum in scaling:
            for j in range(replicas - minimum):
                drafts.append(gang(f"{base}-{group}-{j}", [(c, c) for c in members]))
    return drafts
