"""Dynamic Resource Allocation (``resource.k8s.io``): the GPUs a pod claims through ResourceClaimTemplates
submitted with it (kai-semantics.md §17).

KAI counts, for each claim of a pod, each request whose device class name contains "gpu" (any case): its
exact count, 1 when unset. muster has no DRA driver and no devices but GPUs, so a claim's GPUs become whole
GPUs of the pod (``podspec.add_claimed_gpus``) and are counted and placed as ``nvidia.com/gpu`` is.

A ResourceClaimTemplate travels in the submission of the workloads that name it, as a Topology does
(muster holds none). What muster cannot honour is refused naming its field: a shared claim
(``resourceClaimName``: KAI counts it per pod but once per node, and muster places no shared device),
a template the submission lacks, a device class that is not a GPU's, ``allocationMode: All`` (every
device of a node), ``firstAvailable`` alternatives, CEL ``selectors``, ``adminAccess``, device
``tolerations``, consumable ``capacity``, and the claim's ``constraints`` and ``config``.

The API versions KAI reads differ in one place: ``v1beta1`` writes ``deviceClassName``, ``count`` and
``allocationMode`` on the request itself, ``v1beta2`` and ``v1`` under the request's ``exactly``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from muster.bounds import MAX_NODE_GPUS
from muster.grouping.errors import ManifestError
from muster.grouping.fields import as_map, get_int, get_list, get_map, get_str, join, require_map
from muster.grouping.podspec import add_claimed_gpus

if TYPE_CHECKING:
    from muster.grouping.model import Draft, PodTemplate

GROUP = "resource.k8s.io"
VERSIONS = ("v1", "v1beta2", "v1beta1")
TEMPLATE_KIND = "ResourceClaimTemplate"
CLAIM_KIND = "ResourceClaim"
EXACT_COUNT = "ExactCount"
ALL = "All"

_SHARED = (
    "a shared ResourceClaim: KAI counts it for each pod but once per node, and muster places no shared "
    "device; give the pod its own claim with resourceClaimTemplateName"
)
# Request fields muster cannot honour, with why; absent, empty or false they ask for nothing.
_REQUEST_UNHONOURED = {
    "firstAvailable": "alternatives: muster cannot tell which device the pod would get (KAI counts none)",
    "selectors": "CEL device selectors: muster places any GPU and cannot tell which devices they admit",
    "adminAccess": "admin access to devices in use: muster places only devices no pod holds",
    "tolerations": "device taints are not modelled: muster places any GPU",
    "capacity": "consumable device capacity: muster places whole devices",
}
_CLAIM_UNHONOURED = {
    "constraints": "constraints across a claim's devices are not placed by",
    "config": "device configuration is for a DRA driver, which muster does not have",
}
_EXACT_KEYS = (
    "deviceClassName",
    "allocationMode",
    "count",
    "selectors",
    "adminAccess",
    "tolerations",
    "capacity",
)


@dataclass(frozen=True)
class ClaimTemplate:
    """One checked ResourceClaimTemplate: the GPUs each claim made from it holds."""

    name: str
    gpus: int
    requests: frozenset[str]
    """Its requests' names, which a container's claim may name (``request``)."""


@dataclass(frozen=True)
class PodClaim:
    """A pod's claim made from a template, as the pod spec names it."""

    template: str
    path: str
    """The ``resourceClaimTemplateName`` field naming the template."""
    requests: tuple[tuple[str, str], ...] = ()
    """(request name, field) for each container's claim naming one request of the claim."""


def _version(doc: dict[str, Any]) -> str | None:
    group, _, version = str(doc.get("apiVersion", "")).partition("/")
    return version if group == GROUP else None


def _unhonoured(obj: dict[str, Any], path: str, fields: Mapping[str, str]) -> None:
    for key, why in fields.items():
        if obj.get(key) not in (None, [], {}, False):
            raise ManifestError(join(path, key), f"muster does not honour it: {why}")


def _known(obj: dict[str, Any], path: str, allowed: Sequence[str]) -> None:
    for key in obj:
        if key not in allowed:
            raise ManifestError(join(path, str(key)), f"unknown key {key!r}")


def _request_gpus(request: dict[str, Any], path: str, version: str) -> int:
    """The whole GPUs one device request asks for; what muster cannot honour raises naming it."""
    if version == "v1beta1":
        _known(request, path, ("name", "firstAvailable", *_EXACT_KEYS))
        _unhonoured(request, path, _REQUEST_UNHONOURED)
        exact, epath = request, path
    else:
        _known(request, path, ("name", "exactly", "firstAvailable"))
        _unhonoured(request, path, {"firstAvailable": _REQUEST_UNHONOURED["firstAvailable"]})
        exact, epath = require_map(request, "exactly", path), join(path, "exactly")
        _known(exact, epath, _EXACT_KEYS)
        _unhonoured(exact, epath, _REQUEST_UNHONOURED)
    device_class = get_str(exact, "deviceClassName", epath) or ""
    if not device_class:
        raise ManifestError(join(epath, "deviceClassName"), "required field is missing")
    if "gpu" not in device_class.lower():
        raise ManifestError(
            join(epath, "deviceClassName"),
            f"{device_class!r} is not a GPU device class (its name has no 'gpu'): muster has no such devices",
        )
    mode = get_str(exact, "allocationMode", epath) or EXACT_COUNT
    if mode == ALL:
        raise ManifestError(
            join(epath, "allocationMode"),
            "muster does not honour All: it would take every GPU of a node; ask for a count",
        )
    if mode != EXACT_COUNT:
        raise ManifestError(join(epath, "allocationMode"), f"expected {EXACT_COUNT} or {ALL}, got {mode!r}")
    count = get_int(exact, "count", epath, 1)
    assert count is not None
    if not 0 < count <= MAX_NODE_GPUS:
        raise ManifestError(
            join(epath, "count"), f"must be from 1 to {MAX_NODE_GPUS} (a node's most), got {count}"
        )
    return count


def read_template(doc: dict[str, Any]) -> ClaimTemplate:
    """A ResourceClaimTemplate document, checked; raises ``ManifestError`` naming the field (paths from
    the document)."""
    version = _version(doc)
    if version not in VERSIONS:
        raise ManifestError(
            "apiVersion",
            f"expected one of {', '.join(GROUP + '/' + v for v in VERSIONS)}, got {doc.get('apiVersion')!r}",
        )
    name = get_str(get_map(doc, "metadata", ""), "name", "metadata") or ""
    if not name:
        raise ManifestError("metadata.name", "required field is missing: a pod names its template by it")
    claim = get_map(require_map(doc, "spec", ""), "spec", "spec")
    cpath = "spec.spec"
    _known(claim, cpath, ("devices",))
    dpath = join(cpath, "devices")
    devices = get_map(claim, "devices", cpath)
    _known(devices, dpath, ("requests", *_CLAIM_UNHONOURED))
    _unhonoured(devices, dpath, _CLAIM_UNHONOURED)
    rpath = join(dpath, "requests")
    gpus, names = 0, set()
    for i, raw in enumerate(get_list(devices, "requests", dpath)):
        ipath = join(rpath, i)
        request = as_map(raw, ipath)
        rname = get_str(request, "name", ipath) or ""
        if not rname:
            raise ManifestError(join(ipath, "name"), "required field is missing")
        if rname in names:
            raise ManifestError(join(ipath, "name"), f"{rname!r} names another request of the claim already")
        names.add(rname)
        gpus += _request_gpus(request, ipath, version)
    return ClaimTemplate(name=name, gpus=gpus, requests=frozenset(names))


def is_dra_manifest(doc: object) -> bool:
    """Whether ``doc`` is a ``resource.k8s.io`` ResourceClaimTemplate or ResourceClaim."""
    return (
        isinstance(doc, dict) and doc.get("kind") in (TEMPLATE_KIND, CLAIM_KIND) and _version(doc) is not None
    )


def read_templates(docs: Sequence[Any]) -> Mapping[str, ClaimTemplate]:
    """The ResourceClaimTemplates of a submission, checked, by name; a submitted ResourceClaim (a shared
    claim) is refused. Errors name their document."""
    out: dict[str, ClaimTemplate] = {}
    for i, doc in enumerate(docs):
        if not is_dra_manifest(doc):
            continue
        if doc["kind"] == CLAIM_KIND:
            raise ManifestError("kind", _SHARED, document=i)
        try:
            template = read_template(doc)
        except ManifestError as exc:
            raise exc.in_document(i) from None
        if template.name in out:
            raise ManifestError(
                "metadata.name", f"{template.name!r} names another {TEMPLATE_KIND} already", document=i
            )
        out[template.name] = template
    return MappingProxyType(out)


def pod_claims(spec: dict[str, Any], path: str) -> tuple[PodClaim, ...]:
    """The claims a pod spec (at ``path``) makes from templates, with the requests its containers name;
    a shared claim, or a container's claim naming no claim of the pod, raises naming the field."""
    raw = spec.get("resourceClaims")
    if raw is None and not _any_container_claims(spec):
        return ()  # nearly every pod: nothing to read
    lpath = join(path, "resourceClaims")
    claims: dict[str, tuple[str, str]] = {}
    for i, item in enumerate(get_list(spec, "resourceClaims", path)):
        ipath = join(lpath, i)
        claim = as_map(item, ipath)
        _known(claim, ipath, ("name", "resourceClaimName", "resourceClaimTemplateName"))
        name = get_str(claim, "name", ipath) or ""
        if not name:
            raise ManifestError(join(ipath, "name"), "required field is missing")
        if name in claims:
            raise ManifestError(join(ipath, "name"), f"{name!r} names another claim of the pod already")
        if claim.get("resourceClaimName") is not None:
            raise ManifestError(join(ipath, "resourceClaimName"), f"muster does not honour it: {_SHARED}")
        tpath = join(ipath, "resourceClaimTemplateName")
        template = get_str(claim, "resourceClaimTemplateName", ipath) or ""
        if not template:
            raise ManifestError(tpath, "required field is missing")
        claims[name] = (template, tpath)
    named: dict[str, list[tuple[str, str]]] = {name: [] for name in claims}
    for kind in ("initContainers", "containers"):
        for i, container in enumerate(get_list(spec, kind, path)):
            if not isinstance(container, dict):
                continue  # refused where the containers' requests are read
            ipath = join(join(path, kind), i)
            rpath = join(ipath, "resources")
            resources = get_map(container, "resources", ipath)
            cpath = join(rpath, "claims")
            for j, item in enumerate(get_list(resources, "claims", rpath)):
                jpath = join(cpath, j)
                use = as_map(item, jpath)
                _known(use, jpath, ("name", "request"))
                name = get_str(use, "name", jpath) or ""
                if name not in claims:
                    raise ManifestError(
                        join(jpath, "name"), f"{name!r} names no claim of the pod (its spec.resourceClaims)"
                    )
                request = get_str(use, "request", jpath) or ""
                if request:
                    named[name].append((request, join(jpath, "request")))
    return tuple(
        PodClaim(template=template, path=tpath, requests=tuple(named[name]))
        for name, (template, tpath) in claims.items()
    )


def refuse_container_claims(containers: Sequence[tuple[dict[str, Any], str]], why: str) -> None:
    """Refuse, naming it, a container's ``resources.claims`` where its pod can have no claim (``why``)."""
    for container, cpath in containers:
        resources = get_map(container, "resources", cpath)
        if resources.get("claims"):
            raise ManifestError(join(join(cpath, "resources"), "claims"), f"names no claim of the pod: {why}")


def _any_container_claims(spec: dict[str, Any]) -> bool:
    return any(
        isinstance(c, dict) and isinstance(c.get("resources"), dict) and c["resources"].get("claims")
        for kind in ("containers", "initContainers")
        if isinstance(spec.get(kind), list)
        for c in spec[kind]
    )


def _claimed(template: PodTemplate, templates: Mapping[str, ClaimTemplate]) -> PodTemplate:
    gpus = 0
    for claim in template.claims:
        found = templates.get(claim.template)
        if found is None:
            raise ManifestError(
                claim.path,
                f"names the {TEMPLATE_KIND} {claim.template!r}, which the submission does not hold: submit it "
                "in one file with the workload (muster holds none)",
            )
        for request, rpath in claim.requests:
            if request not in found.requests:
                raise ManifestError(
                    rpath, f"{request!r} is not a request of the {TEMPLATE_KIND} {found.name!r}"
                )
        gpus += found.gpus
    pod = add_claimed_gpus(
        template.pod, gpus, template.annotations, template.meta_path, template.claims[0].path
    )
    return replace(template, pod=pod, claims=())


def with_claimed_gpus(draft: Draft, templates: Mapping[str, ClaimTemplate]) -> Draft:
    """``draft`` with each pod's claimed GPUs added to its GPU request (and its claims resolved)."""
    if not any(t.claims for t in draft.pods):
        return draft
    return replace(draft, pods=tuple(_claimed(t, templates) if t.claims else t for t in draft.pods))
