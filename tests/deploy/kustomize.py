"""Rendering deploy/k8s the way ``kubectl kustomize`` does, offline.

``render`` uses a real kustomize when the machine has one (``kustomize``, or
``kubectl`` 1.21 or newer, which embeds it). Where neither exists,
``render_subset`` renders the part of kustomize deploy/k8s uses: plain
resource files, ``namespace``, ``labels`` without selectors, and
``configMapGenerator`` with its content-hash names and the references to
them in pod specs. ``test_k8s_manifests`` checks that both agree wherever a
real kustomize is present, so the subset cannot drift from the real thing
unnoticed.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import yaml

# Kinds that have no namespace, among those a kustomization here may hold.
CLUSTER_SCOPED = {"Namespace", "ClusterRole", "ClusterRoleBinding", "PriorityClass", "StorageClass"}

# The kubectl that first embedded a kustomize with `labels:` (kustomize v4).
MIN_KUBECTL = (1, 21)


class UnsupportedKustomization(ValueError):
    """The kustomization uses a field the subset renderer does not implement."""


def kustomize_command() -> list[str] | None:
    """The command of a real kustomize on this machine, or None."""
    if shutil.which("kustomize"):
        return ["kustomize", "build"]
    kubectl = shutil.which("kubectl")
    if not kubectl:
        return None
    try:
        out = subprocess.run(
            [kubectl, "version", "--client", "-o", "json"], capture_output=True, text=True, timeout=30
        )
        client = json.loads(out.stdout)["clientVersion"]
        version = (int(client["major"]), int(re.match(r"\d+", client["minor"]).group()))
    except (OSError, subprocess.SubprocessError, ValueError, KeyError, AttributeError):
        return None
    return [kubectl, "kustomize"] if version >= MIN_KUBECTL else None


def render(path: Path) -> tuple[list[dict[str, Any]], str]:
    """Every object the kustomization at ``path`` renders, and which renderer made them."""
    command = kustomize_command()
    if command is None:
        return render_subset(path), "subset"
    out = subprocess.run([*command, str(path)], capture_output=True, text=True, timeout=120)
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} {path} failed:\n{out.stderr}")
    return [doc for doc in yaml.safe_load_all(out.stdout) if doc], " ".join(command)


def render_subset(path: Path) -> list[dict[str, Any]]:
    """Render the kustomize subset described in the module docstring."""
    spec = yaml.safe_load((path / "kustomization.yaml").read_text())
    known = {"apiVersion", "kind", "namespace", "labels", "resources", "configMapGenerator"}
    unknown = sorted(set(spec) - known)
    if unknown:
        raise UnsupportedKustomization(f"{path}/kustomization.yaml: fields {unknown} are not in the subset")

    objects: list[dict[str, Any]] = []
    for i, resource in enumerate(spec.get("resources", [])):
        file = path / resource
        if not file.is_file():
            raise UnsupportedKustomization(f"resources[{i}]: {resource} is not a file")
        objects.extend(doc for doc in yaml.safe_load_all(file.read_text()) if doc)

    renamed: dict[str, str] = {}
    for i, generator in enumerate(spec.get("configMapGenerator", [])):
        config_map = _generate_config_map(path, generator, f"configMapGenerator[{i}]")
        renamed[generator["name"]] = config_map["metadata"]["name"]
        objects.append(config_map)

    labels: dict[str, str] = {}
    for i, entry in enumerate(spec.get("labels", [])):
        if entry.get("includeSelectors") or entry.get("includeTemplates"):
            raise UnsupportedKustomization(f"labels[{i}]: only labels without selectors or templates")
        labels.update(entry.get("pairs", {}))

    for obj in objects:
        meta = obj.setdefault("metadata", {})
        if labels:
            meta["labels"] = {**meta.get("labels", {}), **labels}
        if "namespace" in spec and obj["kind"] not in CLUSTER_SCOPED:
            meta["namespace"] = spec["namespace"]
        pod = _pod_spec(obj)
        if pod is not None:
            _rename_config_maps(pod, renamed)
    return objects


def config_map_hash(name: str, data: dict[str, str]) -> str:
    """kustomize's name suffix of a generated ConfigMap.

    It hashes the ConfigMap's kind and data (the name is still empty when
    the hash is taken) as compact JSON with sorted keys, keeps the first ten
    hex digits of its SHA-256, and swaps 0, 1, 3, a, e for consonants so no
    suffix spells a word.
    """
    encoded = json.dumps(
        {"data": data, "kind": "ConfigMap", "name": ""}, sort_keys=True, separators=(",", ":")
    )
    # Go's encoder escapes these three inside strings, and the hash is of Go's bytes.
    encoded = encoded.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    digest = hashlib.sha256(encoded.encode()).hexdigest()[:10]
    return digest.translate(str.maketrans("013ae", "ghkmt"))


def _generate_config_map(path: Path, generator: dict[str, Any], where: str) -> dict[str, Any]:
    unknown = sorted(set(generator) - {"name", "files", "literals"})
    if unknown:
        raise UnsupportedKustomization(f"{where}: fields {unknown} are not in the subset")
    data: dict[str, str] = {}
    for entry in generator.get("literals", []):
        key, _, value = entry.partition("=")
        data[key] = value
    for entry in generator.get("files", []):
        key, _, file = entry.rpartition("=")
        data[key or Path(file).name] = (path / file).read_text()
    name = generator["name"]
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": f"{name}-{config_map_hash(name, data)}"},
        "data": data,
    }


def _pod_spec(obj: dict[str, Any]) -> dict[str, Any] | None:
    if obj["kind"] in {"Deployment", "StatefulSet", "DaemonSet", "Job"}:
        return obj["spec"]["template"]["spec"]
    return None


def _rename_config_maps(pod: dict[str, Any], renamed: dict[str, str]) -> None:
    def rename(ref: dict[str, Any] | None, field: str = "name") -> None:
        if ref is not None and ref.get(field) in renamed:
            ref[field] = renamed[ref[field]]

    for volume in pod.get("volumes", []):
        rename(volume.get("configMap"))
    for container in pod.get("initContainers", []) + pod.get("containers", []):
        for source in container.get("envFrom", []):
            rename(source.get("configMapRef"))
        for var in container.get("env", []):
            rename(var.get("valueFrom", {}).get("configMapKeyRef"))
