"""What one pod asks for: Kubernetes' effective request, in muster's base units.

Kubernetes sums the requests of the app containers (and of restartable init
containers, i.e. sidecars), takes the larger of that and each ordinary init
container (plus the sidecars started before it), and adds the pod overhead. A
resource a container only limits is requested at its limit. KAI's GPU-sharing
annotations turn a pod into a share of one device: ``gpu-fraction`` (0 < f <= 1)
or ``gpu-memory`` (MiB of one device). MIG instances (``nvidia.com/mig-<g>g.<m>gb``)
are extended resources whose GPUs the allocator counts against quota (``muster.mig``). GPUs a pod
claims through DRA (``dra_claims``) are added to its whole GPUs once its submission's templates are read.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

from muster import mig, pod_constraints
from muster.events import PodSpec, Resources, SecretEnv
from muster.grouping.controller_labels import refuse_per_pod_selectors
from muster.grouping.errors import ManifestError
from muster.grouping.fields import as_map, get_list, get_map, get_str, join, string_map
from muster.grouping.secret_env import pod_secret_env
from muster.quantity import QuantityError, byte_count, cpu_millis, gpu_devices, whole_count

GPU_RESOURCE = "nvidia.com/gpu"
GPU_FRACTION = "gpu-fraction"
GPU_FRACTION_DEVICES = "gpu-fraction-num-devices"
GPU_MEMORY = "gpu-memory"
_MIB = 2**20
# Resources the allocator does not place by: node-local storage and huge pages.
_IGNORED = ("ephemeral-storage", "storage", "pods")


def _amounts(container: dict[str, Any], path: str) -> dict[str, int | float]:
    """One container's effective request per resource, in base units."""
    return resource_amounts(get_map(container, "resources", path), join(path, "resources"))


def resource_amounts(resources: dict[str, Any], rpath: str) -> dict[str, int | float]:
    """A ``resources`` block's effective request (the request, else the limit) in base units."""
    requests = get_map(resources, "requests", rpath)
    limits = get_map(resources, "limits", rpath)
    out = resource_list(limits, join(rpath, "limits"))
    out.update(resource_list(requests, join(rpath, "requests")))
    return out


def resource_list(values: dict[str, Any], path: str) -> dict[str, int | float]:
    """A flat resource list (``{cpu: 1, memory: 1Gi}``) in base units, keyed gpu/cpu/memory/extended name."""
    out: dict[str, int | float] = {}
    for name in sorted(values):
        if name in _IGNORED or str(name).startswith("hugepages-"):
            continue
        value = values[name]
        try:
            if name == "cpu":
                out["cpu"] = cpu_millis(value)
            elif name == "memory":
                out["memory"] = byte_count(value)
            elif name == GPU_RESOURCE:
                out["gpu"] = gpu_devices(value)
            else:
                if mig.is_profile(str(name)):
                    mig.slices(str(name))
                out[str(name)] = whole_count(value)
        except QuantityError as exc:
            raise ManifestError(join(path, str(name)), str(exc)) from exc
        except mig.MigError as exc:
            raise ManifestError(join(path, str(name)), exc.message) from None
    return out


def _add(a: dict[str, int | float], b: dict[str, int | float]) -> dict[str, int | float]:
    out = dict(a)
    for key, value in b.items():
        out[key] = out.get(key, 0) + value
    return out


def _max(a: dict[str, int | float], b: dict[str, int | float]) -> dict[str, int | float]:
    out = dict(a)
    for key, value in b.items():
        out[key] = max(out.get(key, 0), value)
    return out


def _containers(spec: dict[str, Any], key: str, path: str) -> list[tuple[dict[str, Any], str]]:
    out = []
    for i, item in enumerate(get_list(spec, key, path)):
        cpath = join(join(path, key), i)
        out.append((as_map(item, cpath), cpath))
    return out


def names_an_image(spec: dict[str, Any]) -> bool:
    """Whether a container of the pod spec (init containers included) names an image to run."""
    return any(
        isinstance(c, dict) and bool(c.get("image"))
        for key in ("containers", "initContainers")
        if isinstance(spec.get(key), list)
        for c in spec[key]
    )


def effective_requests(spec: dict[str, Any], path: str) -> dict[str, int | float]:
    """The pod's effective request per resource (Kubernetes' rule), base units."""
    if not isinstance(spec.get("containers"), list) or not spec["containers"]:
        raise ManifestError(join(path, "containers"), "a pod needs at least one container")
    overhead = get_map(spec, "overhead", path)
    return combine_requests(
        _containers(spec, "containers", path),
        _containers(spec, "initContainers", path),
        resource_list(overhead, join(path, "overhead")),
    )


def combine_requests(
    containers: Sequence[tuple[dict[str, Any], str]],
    init_containers: Sequence[tuple[dict[str, Any], str]] = (),
    overhead: dict[str, int | float] | None = None,
) -> dict[str, int | float]:
    """Kubernetes' effective pod request from (container, path) pairs."""
    app: dict[str, int | float] = {}
    for container, cpath in containers:
        app = _add(app, _amounts(container, cpath))
    sidecars: dict[str, int | float] = {}
    init_peak: dict[str, int | float] = {}
    for container, cpath in init_containers:
        amounts = _amounts(container, cpath)
        if get_str(container, "restartPolicy", cpath) == "Always":
            sidecars = _add(sidecars, amounts)
        else:
            init_peak = _max(init_peak, _add(sidecars, amounts))
    return _add(_max(_add(app, sidecars), init_peak), overhead or {})


def _gpu_share(annotations: dict[str, str], path: str, whole: float) -> tuple[float, int]:
    """(gpu devices, gpu memory bytes) after KAI's sharing annotations."""
    apath = join(path, "annotations")
    for name in sorted(annotations):
        if mig.is_profile(name):
            # KAI reads such a pod as a legacy MIG task: counted against quota while it runs, never
            # scheduled (node_info PredicateByNodeResourcesType). A new pod so written would wait for ever.
            raise ManifestError(
                join(apath, name),
                "a legacy MIG annotation: KAI never schedules such a pod; "
                "ask for the profile in a container's resources instead",
            )
    gpu, memory = whole, 0
    if GPU_FRACTION in annotations:
        fpath = join(apath, GPU_FRACTION)
        try:
            fraction = float(annotations[GPU_FRACTION])
        except ValueError as exc:
            raise ManifestError(fpath, f"expected a number, got {annotations[GPU_FRACTION]!r}") from exc
        if not 0 < fraction <= 1:
            raise ManifestError(fpath, f"must be above 0 and at most 1, got {fraction}")
        devices = annotations.get(GPU_FRACTION_DEVICES, "1")
        if devices.strip() != "1":
            raise ManifestError(
                join(apath, GPU_FRACTION_DEVICES),
                f"only one shared device per pod is supported, got {devices!r}",
            )
        gpu = fraction
    if GPU_MEMORY in annotations:
        mpath = join(apath, GPU_MEMORY)
        if GPU_FRACTION in annotations:
            raise ManifestError(mpath, f"cannot be combined with {GPU_FRACTION}")
        try:
            mib = int(annotations[GPU_MEMORY].strip())
        except ValueError as exc:
            raise ManifestError(mpath, f"expected whole MiB, got {annotations[GPU_MEMORY]!r}") from exc
        if mib <= 0:
            raise ManifestError(mpath, f"must be positive, got {mib}")
        gpu, memory = 0.0, mib * _MIB
    if (GPU_FRACTION in annotations or GPU_MEMORY in annotations) and whole:
        raise ManifestError(apath, f"a shared-GPU pod must not also request {GPU_RESOURCE}")
    return gpu, memory


def add_claimed_gpus(
    pod: PodSpec, gpus: int, annotations: dict[str, str], meta_path: str, claim_path: str
) -> PodSpec:
    """``pod`` asking also for ``gpus`` whole GPUs its DRA claims hold (``dra_claims``), which count and
    are placed as ``nvidia.com/gpu`` is. Refused beside a GPU share or MIG instances: muster cannot tell
    which the pod meant (``claim_path`` names the first claim)."""
    if not gpus:
        return pod
    for name in (GPU_FRACTION, GPU_MEMORY):
        if name in annotations:
            raise ManifestError(
                join(join(meta_path, "annotations"), name), "cannot be combined with a DRA GPU claim"
            )
    resources = msgspec.structs.replace(pod.resources, gpu=pod.resources.gpu + gpus)
    try:
        mig.check_request(resources.gpu, resources.gpu_memory, resources.extended)
    except mig.MigError as exc:
        raise ManifestError(claim_path, f"a DRA GPU claim beside MIG instances: {exc}") from None
    return msgspec.structs.replace(pod, resources=resources)


def build_pod_spec(
    spec: dict[str, Any],
    annotations: dict[str, str],
    path: str,
    *,
    role: str,
    count: int,
    subgroup: str = "",
    meta_path: str = "",
    labels: dict[str, str] | None = None,
) -> PodSpec:
    """A muster ``PodSpec`` for ``count`` pods of one Kubernetes pod spec, labelled ``labels`` (the pod
    template's own, which other pods' affinity selects).

    ``path`` locates the pod spec, ``meta_path`` the metadata holding ``annotations``. A field that
    changes where the pod may run and that muster does not honour is refused by name.
    """
    try:
        pod_constraints.refuse_unhonoured(spec)
    except pod_constraints.ConstraintError as exc:
        raise ManifestError(join(path, exc.path), exc.message) from None
    constraints = placement_constraints(spec, path)
    return pod_spec_from_totals(
        effective_requests(spec, path),
        annotations,
        string_map(spec, "nodeSelector", path),
        role=role,
        count=count,
        subgroup=subgroup,
        meta_path=meta_path,
        constraints=constraints,
        labels=labels,
        secret_env=pod_secret_env(spec, path),
        spec_path=path,
    )


def placement_constraints(spec: dict[str, Any], path: str) -> pod_constraints.Constraints:
    """The ``tolerations``, required node ``affinity`` and required pod (anti-)affinity of a pod spec (or
    of a framework's pod part spelled like one) at ``path``; a bad or unhonoured one raises naming its
    field, a pod (anti-)affinity term selecting a label a controller gives each pod its own value of
    among them."""
    try:
        constraints = pod_constraints.from_pod_spec(spec)
        if constraints is not pod_constraints.NONE:
            refuse_per_pod_selectors(spec.get("affinity"))
        return constraints
    except pod_constraints.ConstraintError as exc:
        raise ManifestError(join(path, exc.path), exc.message) from None


def pod_spec_from_totals(
    totals: dict[str, int | float],
    annotations: dict[str, str],
    node_selector: dict[str, str],
    *,
    role: str,
    count: int,
    subgroup: str = "",
    meta_path: str = "",
    constraints: pod_constraints.Constraints | None = None,
    labels: dict[str, str] | None = None,
    secret_env: list[SecretEnv] | None = None,
    spec_path: str = "",
) -> PodSpec:
    """A ``PodSpec`` from an effective request (see ``combine_requests``), with its placement
    ``constraints`` and its pods' ``labels``; ``spec_path`` locates the pod spec whose containers asked
    for it."""
    totals = dict(totals)
    gpu, gpu_memory = _gpu_share(annotations, meta_path, float(totals.pop("gpu", 0.0)))
    cpu = int(totals.pop("cpu", 0))
    memory = int(totals.pop("memory", 0))
    extended = {key: int(totals[key]) for key in sorted(totals)}
    try:
        mig.check_request(gpu, gpu_memory, extended)
    except mig.MigError as exc:
        # the GPUs may come from another container or from a sharing annotation: name the containers
        raise ManifestError(join(spec_path, "containers"), str(exc)) from None
    return PodSpec(
        role=role,
        count=count,
        resources=Resources(gpu=gpu, gpu_memory=gpu_memory, cpu=cpu, memory=memory, extended=extended),
        node_selector=node_selector,
        subgroup=subgroup,
        **(constraints.pod_spec_fields() if constraints else {}),
        labels=dict(labels or {}),
        secret_env=list(secret_env or []),
    )
