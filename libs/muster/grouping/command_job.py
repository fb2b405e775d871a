"""The command job kind (``apiVersion: muster.dev/v1``, ``kind: Command``): processes for ``muster agent``.

    apiVersion: muster.dev/v1
    kind: Command
    metadata: {name: train}
    spec:
      queue: team-a
      command: [torchrun, --nproc-per-node=1, train.py]
      env: {EPOCHS: "3"}  # or a list, where a value may be a secret's:
      # env: [{name: EPOCHS, value: "3"}, {name: HF_TOKEN, secret: hf-token}]
      workdir: /home/me/project
      count: 2          # identical processes, ranks 0..count-1
      min: 2            # gang size; default: count
      gpus: 1           # per process; a fraction shares one device
      cpu: "4"          # cores or millicores ("500m")
      memory: 16Gi
      grace_period: 30  # seconds between SIGTERM and SIGKILL on eviction
      priority_class: train
      node_selector: {zone: a}
      tolerations: [{key: gpu, operator: Exists}]   # Kubernetes' spelling, as are
      affinity: {nodeAffinity: {...}}               # these (required node affinity, required pod
                                                    # affinity and anti-affinity, which select pods
                                                    # by their job's metadata.labels)

One gang of ``count`` pods; each carries the command, and the group is of
the ``command`` runtime, so it lands only on a node whose agent can run it.
"""

from __future__ import annotations

import re
from typing import Any

import msgspec

from muster import runtimes
from muster.events import PodGroupCreated, SecretEnv
from muster.grouping.errors import ManifestError
from muster.grouping.model import Context, Meta
from muster.scenario import ScenarioError, job_to_podgroup
from muster.secret_names import SecretError, check_name

API_GROUP = "muster.dev"
KIND = "Command"


class EnvEntry(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One variable: a ``value`` as given, or a ``secret``'s (``muster.secrets_store``), read by the
    agent when the pod starts, so the value is in no event."""

    name: str
    value: str | None = None
    secret: str | None = None


class CommandSpec(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    queue: str
    command: list[str]
    env: dict[str, str] | list[EnvEntry] = {}
    workdir: str | None = None
    count: int = 1
    min: int | None = None
    gpus: float = 0.0
    gpu_memory: str | int | None = None
    cpu: str | float | None = None
    memory: str | int | None = None
    grace_period: float | None = None
    priority_class: str | None = None
    priority: int | None = None
    preemptible: bool | None = None
    pool: str = "default"
    node_selector: dict[str, str] = {}
    tolerations: list[Any] = []
    affinity: dict[str, Any] | None = None


def manifest(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    """A command job as a manifest the podgrouper accepts."""
    return {"apiVersion": f"{API_GROUP}/v1", "kind": KIND, "metadata": {"name": name}, "spec": spec}


def _spec_path(path: str) -> str:
    return f"{path}.spec" if path else "spec"


def _read(obj: dict[str, Any], path: str) -> CommandSpec:
    where = _spec_path(path)
    raw = obj.get("spec")
    if not isinstance(raw, dict):
        raise ManifestError(where, "expected a mapping with at least queue and command")
    try:
        spec = msgspec.convert(raw, CommandSpec)
    except msgspec.ValidationError as exc:
        message = str(exc).split(" - at ")[0]
        found = re.search(r"`\$\.([^`]+)`", str(exc)) or re.search(r"field `([^`]+)`", message)
        raise ManifestError(f"{where}.{found.group(1)}" if found else where, message) from None
    if not spec.command or not all(isinstance(arg, str) and arg for arg in spec.command):
        raise ManifestError(f"{where}.command", "must be a non-empty list of non-empty strings")
    if spec.count < 1:
        raise ManifestError(f"{where}.count", f"must be at least 1, got {spec.count}")
    if spec.min is not None and not 1 <= spec.min <= spec.count:
        raise ManifestError(f"{where}.min", f"must be between 1 and count ({spec.count}), got {spec.min}")
    if spec.grace_period is not None and spec.grace_period < 0:
        raise ManifestError(f"{where}.grace_period", "must not be negative")
    return spec


def _environment(spec: CommandSpec, where: str) -> tuple[dict[str, str], list[SecretEnv]]:
    """The spec's variables: those given as values, and those read from secrets at start."""
    if isinstance(spec.env, dict):
        return dict(spec.env), []
    values: dict[str, str] = {}
    refs: list[SecretEnv] = []
    for i, entry in enumerate(spec.env):
        path = f"{where}.env[{i}]"
        if not entry.name or "=" in entry.name or "\0" in entry.name:
            raise ManifestError(f"{path}.name", "must be a variable's name: not empty, no '=' or NUL")
        if entry.name in values or any(ref.name == entry.name for ref in refs):
            raise ManifestError(f"{path}.name", f"{entry.name} is set twice")
        if (entry.value is None) == (entry.secret is None):
            raise ManifestError(path, "expected exactly one of value and secret")
        if entry.secret is not None:
            try:
                refs.append(SecretEnv(name=entry.name, secret=check_name(entry.secret, f"{path}.secret")))
            except SecretError as exc:
                raise ManifestError(exc.field, exc.message) from None
        else:
            values[entry.name] = entry.value  # type: ignore[assignment] (not None: checked above)
    return values, refs


def group_command(obj: dict[str, Any], path: str, meta: Meta, ctx: Context) -> list[PodGroupCreated]:
    spec = _read(obj, path)
    env, secret_env = _environment(spec, _spec_path(path))
    resources: dict[str, Any] = {"gpu": spec.gpus}
    for name in ("gpu_memory", "cpu", "memory"):
        value = getattr(spec, name)
        if value is not None:
            resources[name] = value
    job: dict[str, Any] = {
        "name": meta.name,
        "queue": spec.queue,
        "pool": spec.pool,
        "min_available": spec.min if spec.min is not None else spec.count,
        "pods": [
            {
                "count": spec.count,
                "resources": resources,
                "node_selector": spec.node_selector,
                "tolerations": spec.tolerations,
                "affinity": spec.affinity,
                "labels": meta.labels,
            }
        ],
    }
    for name in ("priority_class", "priority", "preemptible"):
        if getattr(spec, name) is not None:
            job[name] = getattr(spec, name)
    try:
        group = job_to_podgroup(job, path=_spec_path(path), kind=KIND)
    except ScenarioError as exc:
        # The scenario's field names are the spec's, except these two.
        where = exc.path.replace(".pods[0].resources.gpu", ".gpus").replace(".pods[0].resources.", ".")
        where = where.replace(".pods[0].", ".")
        raise ManifestError(where.replace(".min_available", ".min"), exc.message) from None
    pods = [
        msgspec.structs.replace(
            pod,
            role="command",
            command=list(spec.command),
            env=env,
            secret_env=secret_env,
            workdir=spec.workdir,
            grace_period=spec.grace_period,
        )
        for pod in group.pods
    ]
    return [msgspec.structs.replace(group, pods=pods, workload_uid=ctx.uid, runtime=runtimes.COMMAND)]
