"""Refusing documents nested too deep, before anything recursive reads them.

PyYAML builds documents recursively and ``json``/msgspec decode them so, as do
the plugins that walk a manifest: a document a thousand levels deep would end
in a ``RecursionError``. Both checks here are iterative and name the first
field past ``limits.MAX_DEPTH``.
"""

from __future__ import annotations

from typing import Any

from muster.bounded_yaml import YamlTooBig
from muster.bounded_yaml import load_yaml_documents as _load_bounded
from muster.bounds import within_nesting
from muster.grouping.errors import ManifestError
from muster.grouping.fields import join
from muster.grouping.limits import MAX_DEPTH, MAX_YAML_NODES


def _too_deep(path: str) -> ManifestError:
    return ManifestError(path, f"nested more than {MAX_DEPTH} levels deep")


def check_depth(value: Any, path: str = "") -> None:
    """Refuse a parsed document nested more than ``MAX_DEPTH`` collections deep."""
    if within_nesting(value, MAX_DEPTH):
        return
    # Each entry keeps the keys above it as a chain, so a path is only spelled out for an error.
    stack: list[tuple[Any, int, tuple | None]] = [(value, 1, None)]
    while stack:
        node, depth, trail = stack.pop()
        if isinstance(node, dict):
            items: Any = ((str(key), child) for key, child in node.items())
        elif isinstance(node, list):
            items = enumerate(node)
        else:
            continue
        if depth > MAX_DEPTH:
            keys: list[str | int] = []
            while trail is not None:
                trail, key = trail
                keys.append(key)
            for key in reversed(keys):
                path = join(path, key)
            raise _too_deep(path)
        stack.extend((child, depth + 1, (trail, key)) for key, child in items)


def load_yaml_documents(text: str) -> list[Any]:
    """Every non-empty document of a YAML (or JSON) stream, once its shape is known to be bounded.

    Raises ``ManifestError`` naming the field nested past ``MAX_DEPTH`` or where the
    stream passes ``MAX_YAML_NODES`` values (marked with its document's index when
    that is not the first), and ``yaml.YAMLError`` for text that is not YAML.
    """
    try:
        return _load_bounded(text, max_depth=MAX_DEPTH, max_nodes=MAX_YAML_NODES)
    except YamlTooBig as exc:
        error = ManifestError(exc.path, exc.message)
        raise (error.in_document(exc.document) if exc.document > 0 else error) from None
