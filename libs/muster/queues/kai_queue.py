"""KAI's own ``scheduling.run.ai/v2`` ``Queue`` manifests, read into muster's ``QueueSpec``.

KAI's units: GPUs in devices, CPU in millicores, memory in megabytes of 10^6
bytes (KAI's ``QueueResources`` type says so); muster's: devices, millicores,
bytes. ``-1`` (unlimited / no limit) stays ``-1``.

A field a KAI resource block leaves out takes muster's default for it (gpu
quota 0, cpu and memory quota -1, weight 1, limit -1), not Go's zero value:
the scenario format's defaults are what muster users read about.
"""

from __future__ import annotations

import re
from typing import Any

from muster.events import MinRuntime, QueueResource, QueueSpec
from muster.names import QUEUE

API_GROUP = "scheduling.run.ai"
KIND = "Queue"
_MEMORY_UNIT = 10**6
_RESOURCES = ("gpu", "cpu", "memory")
_DURATION = re.compile(r"(\d+(?:\.\d+)?)(h|ms|m|s)")
_DURATION_SECONDS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}


class QueueManifestError(ValueError):
    """A Queue manifest muster cannot read; ``path`` names the field."""

    def __init__(self, path: str, message: str) -> None:
        self.path = path
        self.message = message
        super().__init__(f"{path}: {message}")


def is_kai_queue(doc: object) -> bool:
    """Whether ``doc`` is a KAI ``scheduling.run.ai`` Queue manifest."""
    return (
        isinstance(doc, dict)
        and doc.get("kind") == KIND
        and str(doc.get("apiVersion", "")).rpartition("/")[0] == API_GROUP
    )


def _number(value: Any, path: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise QueueManifestError(path, f"expected a number, got {value!r}")
    return float(value)


def _map(value: Any, path: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise QueueManifestError(path, f"expected a mapping, got {type(value).__name__}")
    return value


def _resource(name: str, raw: dict[str, Any], path: str) -> QueueResource:
    scale = _MEMORY_UNIT if name == "memory" else 1
    default_quota = 0.0 if name == "gpu" else -1.0

    def amount(key: str, default: float) -> float:
        if raw.get(key) is None:
            return default
        value = _number(raw[key], f"{path}.{key}")
        return value if value == -1 else value * scale

    weight = (
        _number(raw["overQuotaWeight"], f"{path}.overQuotaWeight")
        if raw.get("overQuotaWeight") is not None
        else 1.0
    )
    return QueueResource(
        quota=amount("quota", default_quota), over_quota_weight=weight, limit=amount("limit", -1.0)
    )


def _duration(value: Any, path: str) -> float:
    """A Go duration (``"10m"``, ``"1h30m"``) or a number of seconds."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    text = str(value).strip()
    parts = _DURATION.findall(text)
    if not parts or "".join(n + u for n, u in parts) != text:
        raise QueueManifestError(path, f"expected a duration such as 10m or 1h30m, got {value!r}")
    return sum(float(n) * _DURATION_SECONDS[u] for n, u in parts)


def parse_kai_queue(doc: dict[str, Any], *, order: int = 0) -> QueueSpec:
    """One KAI Queue manifest as a ``QueueSpec``; ``order`` is its creation order."""
    if not is_kai_queue(doc):
        raise QueueManifestError(
            "kind", f"expected a {API_GROUP}/v2 Queue, got {doc.get('apiVersion')}/{doc.get('kind')}"
        )
    meta = _map(doc.get("metadata"), "metadata")
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        raise QueueManifestError("metadata.name", "required field is missing")
    if (why := QUEUE.refusal(name)) is not None:
        raise QueueManifestError("metadata.name", why)
    spec = _map(doc.get("spec"), "spec")
    parent = spec.get("parentQueue")
    if parent is not None and not isinstance(parent, str):
        raise QueueManifestError("spec.parentQueue", f"expected a queue name, got {parent!r}")
    if parent and (why := QUEUE.refusal(parent)) is not None:
        raise QueueManifestError("spec.parentQueue", why)
    priority = spec.get("priority", 100)
    if isinstance(priority, bool) or not isinstance(priority, int):
        raise QueueManifestError("spec.priority", f"expected an integer, got {priority!r}")
    resources_raw = _map(spec.get("resources"), "spec.resources")
    resources = {}
    for key in _RESOURCES:
        if key in resources_raw:
            path = f"spec.resources.{key}"
            resources[key] = _resource(key, _map(resources_raw[key], path), path)
    min_runtime = None
    preempt, reclaim = spec.get("preemptMinRuntime"), spec.get("reclaimMinRuntime")
    if preempt is not None or reclaim is not None:
        min_runtime = MinRuntime(
            preempt=_duration(preempt, "spec.preemptMinRuntime") if preempt is not None else None,
            reclaim=_duration(reclaim, "spec.reclaimMinRuntime") if reclaim is not None else None,
        )
    return QueueSpec(
        name=name,
        parent=parent or None,
        priority=priority,
        resources=resources,
        min_runtime=min_runtime,
        order=order,
    )


def parse_kai_queues(docs: list[Any]) -> list[QueueSpec]:
    """Every KAI Queue among ``docs`` (other kinds are skipped), in document order.
    Errors name the document: ``[2].spec.resources.cpu.quota``."""
    out = []
    for i, doc in enumerate(docs):
        if not is_kai_queue(doc):
            continue
        try:
            out.append(parse_kai_queue(doc, order=len(out)))
        except QueueManifestError as exc:
            raise QueueManifestError(f"[{i}].{exc.path}", exc.message) from None
    return out
