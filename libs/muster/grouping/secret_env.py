"""A pod spec's variables taken from Secrets (``valueFrom.secretKeyRef``), as muster's secret references.

Kubernetes' ``{name: db, key: password}`` names muster's secret ``db/password``
(``muster secret set db/password``), read in the job owner's secrets when a pod
starts (``muster.secrets_store``); the reference, never a value, goes into the
group's ``PodSpec.secret_env``. What muster cannot honour is refused by name:
an ``optional`` reference (a pod whose secret is missing fails, it never starts
without the variable) and a whole Secret as variables (``envFrom.secretRef``:
muster's secrets are single values, named one by one).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from muster.events import SecretEnv
from muster.field_paths import join
from muster.grouping.errors import ManifestError
from muster.grouping.fields import as_map, get_bool, get_list, get_map, get_str
from muster.secret_names import SecretError, check_name, key_ref_name

_KINDS = ("initContainers", "containers")


def pod_secret_env(spec: dict[str, Any], path: str) -> list[SecretEnv]:
    """Every ``secretKeyRef`` variable of the containers (init containers first) of the pod spec at ``path``."""
    return secret_env(
        (as_map(item, join(join(path, kind), i)), join(join(path, kind), i))
        for kind in _KINDS
        for i, item in enumerate(get_list(spec, kind, path))
    )


def secret_env(containers: Iterable[tuple[dict[str, Any], str]]) -> list[SecretEnv]:
    """Every ``secretKeyRef`` variable of the (container, path) pairs, in order.

    One pod has one set of references: two containers setting one variable from two secrets are refused.
    """
    found: dict[str, SecretEnv] = {}
    for container, cpath in containers:
        _refuse_secret_sources(container, cpath)
        for j, entry in enumerate(get_list(container, "env", cpath)):
            epath = join(join(cpath, "env"), j)
            ref = _reference(as_map(entry, epath), epath)
            if ref is None:
                continue
            if ref.name in found and found[ref.name] != ref:
                raise ManifestError(
                    join(epath, "name"),
                    f"{ref.name} is set from secret {found[ref.name].secret} by another container;"
                    " muster gives a pod's containers one set of secret variables",
                )
            found[ref.name] = ref
    return list(found.values())


def _reference(entry: dict[str, Any], path: str) -> SecretEnv | None:
    source = get_map(entry, "valueFrom", path)
    if "secretKeyRef" not in source:
        return None
    rpath = join(join(path, "valueFrom"), "secretKeyRef")
    ref = as_map(source["secretKeyRef"], rpath)
    variable = get_str(entry, "name", path)
    if not variable:
        raise ManifestError(join(path, "name"), "required field is missing")
    if get_bool(ref, "optional", rpath):
        raise ManifestError(
            join(rpath, "optional"),
            "not honoured: a pod whose secret is missing fails rather than start without the variable",
        )
    name = get_str(ref, "name", rpath)
    key = get_str(ref, "key", rpath)
    for field, value in (("name", name), ("key", key)):
        if not value:
            raise ManifestError(join(rpath, field), "required field is missing")
    try:
        return SecretEnv(name=variable, secret=check_name(key_ref_name(name, key), rpath))  # type: ignore[arg-type]
    except SecretError as exc:
        raise ManifestError(exc.field, exc.message) from None


def _refuse_secret_sources(container: dict[str, Any], path: str) -> None:
    for k, source in enumerate(get_list(container, "envFrom", path)):
        if isinstance(source, dict) and "secretRef" in source:
            raise ManifestError(
                join(join(join(path, "envFrom"), k), "secretRef"),
                "not honoured: name each variable with valueFrom.secretKeyRef",
            )
