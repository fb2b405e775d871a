"""Spark operator SparkApplication: not registered in KAI, so its default rule
applies: one group (driver and executors) of min 1.

The pods come from the application spec: one driver and ``executor.instances``
executors (default 1). Each asks for ``cores`` CPUs (``coreRequest`` wins when
set) and its JVM ``memory`` (Spark's notation: ``512m`` is MiB, no suffix is MiB)
plus the memory overhead Spark adds: ``memoryOverhead`` when set, else
``memoryOverheadFactor`` (default 0.1 for JVM apps, 0.4 for Python and R) of the
memory (in whole MiB, truncated, as Spark computes it), at least 384 MiB. ``gpu: {name: nvidia.com/gpu, quantity}`` asks for GPUs.
"""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

from muster.events import PodSpec, Resources
from muster.grouping import controller_labels
from muster.grouping.errors import ManifestError
from muster.grouping.fields import get_count, get_map, get_str, join, require_map, string_map
from muster.grouping.groupers.default import shared_group
from muster.grouping.model import Context, Draft, Meta, PodTemplate
from muster.grouping.podspec import GPU_RESOURCE, placement_constraints
from muster.quantity import QuantityError, cpu_millis, gpu_devices, whole_count

_MIB = 2**20
_MIN_OVERHEAD = 384 * _MIB
_JVM_UNITS = {"": _MIB, "b": 1, "k": 2**10, "m": _MIB, "g": 2**30, "t": 2**40, "p": 2**50}
_JVM_SIZE = re.compile(r"^(\d+)([kmgtp]?)b?$", re.IGNORECASE)


def jvm_bytes(value: Any, path: str) -> int:
    """Spark's memory notation (``512m``, ``2g``; no suffix means MiB) in bytes."""
    match = _JVM_SIZE.match(str(value).strip()) if isinstance(value, (str, int)) else None
    if match is None or isinstance(value, bool):
        raise ManifestError(path, f"expected a JVM memory size such as 512m or 2g, got {value!r}")
    number, unit = match.groups()
    return int(number) * _JVM_UNITS[unit.lower()]


def _role(spec: dict[str, Any], spath: str, role: str, count: int, controller: dict[str, str]) -> PodTemplate:
    """One role's pods, labelled ``controller`` under the role's own ``labels``."""
    rpath = join(spath, role)
    part = require_map(spec, role, spath)
    cores = part.get("coreRequest", part.get("cores", 1))
    cores_path = join(rpath, "coreRequest" if "coreRequest" in part else "cores")
    try:
        cpu = cpu_millis(cores)
    except QuantityError as exc:
        raise ManifestError(cores_path, str(exc)) from exc
    memory = (
        jvm_bytes(part["memory"], join(rpath, "memory")) if part.get("memory") is not None else 1024 * _MIB
    )
    if part.get("memoryOverhead") is not None:
        overhead = jvm_bytes(part["memoryOverhead"], join(rpath, "memoryOverhead"))
    else:
        jvm = (get_str(spec, "type", spath) or "Scala") in ("Scala", "Java")
        raw_factor = spec.get("memoryOverheadFactor", "0.1" if jvm else "0.4")
        try:
            factor = Decimal(str(raw_factor))
        except ArithmeticError as exc:
            raise ManifestError(
                join(spath, "memoryOverheadFactor"), f"expected a number, got {raw_factor!r}"
            ) from exc
        # Spark works in whole MiB and truncates the product.
        overhead = max(_MIN_OVERHEAD, int(Decimal(memory // _MIB) * factor) * _MIB)
    gpu, extended = 0.0, {}
    gpath = join(rpath, "gpu")
    gpu_spec = get_map(part, "gpu", rpath)
    if gpu_spec:
        name = get_str(gpu_spec, "name", gpath) or GPU_RESOURCE
        try:
            if name == GPU_RESOURCE:
                gpu = gpu_devices(gpu_spec.get("quantity", 1))
            else:
                extended[name] = whole_count(gpu_spec.get("quantity", 1))
        except QuantityError as exc:
            raise ManifestError(join(gpath, "quantity"), str(exc)) from exc
    selector = {**string_map(spec, "nodeSelector", spath), **string_map(part, "nodeSelector", rpath)}
    constraints = placement_constraints(part, rpath)
    labels = string_map(part, "labels", rpath)
    pod = PodSpec(
        role=role,
        count=count,
        resources=Resources(gpu=gpu, cpu=cpu, memory=memory + overhead, extended=extended),
        node_selector=selector,
        **constraints.pod_spec_fields(),
        labels={**controller, **labels},
    )
    return PodTemplate(
        pod=pod,
        labels=labels,
        annotations=string_map(part, "annotations", rpath),
        priority_class_name=get_str(part, "priorityClassName", rpath),
        # Spark's operator runs the application's image, or the role's own.
        image=bool(get_str(part, "image", rpath) or get_str(spec, "image", spath)),
    )


def group_spark(obj: dict[str, Any], path: str, meta: Meta, ctx: Context) -> list[Draft]:
    return spark_drafts(require_map(obj, "spec", path), join(path, "spec"), meta, "SparkApplication")


def spark_drafts(spec: dict[str, Any], spath: str, meta: Meta, kind: str) -> list[Draft]:
    """The group of an application spec at ``spath`` (a SparkApplication's, or the one a
    ScheduledSparkApplication creates), reported as ``kind``."""
    executors = get_count(get_map(spec, "executor", spath), "instances", join(spath, "executor"), 1)
    # A ScheduledSparkApplication's runs are named when they start: only a SparkApplication's name is known.
    controller = "SparkApplication" if kind == "SparkApplication" else "ScheduledSparkApplication"
    pods = [
        _role(
            spec, spath, "driver", 1, controller_labels.synthesised(controller, name=meta.name, role="driver")
        )
    ]
    if spec.get("executor") is not None:
        labels = controller_labels.synthesised(controller, name=meta.name, role="executor")
        pods.append(_role(spec, spath, "executor", executors, labels))
    return shared_group(meta, kind, pods)
