"""Refusing documents nested too deep, before anything recursive reads them.

PyYAML builds documents recursively and ``json``/msgspec decode them so, as do
the plugins that walk a manifest: a document a thousand levels deep would end
in a ``RecursionError``. Both checks here are iterative and name the first
field past ``limits.MAX_DEPTH``.
"""

from __future__ import annotations

from typing import Any

import yaml

from services.podgrouper.errors import ManifestError
from services.podgrouper.fields import join
from services.podgrouper.limits import MAX_DEPTH, MAX_YAML_NODES

# libyaml's safe loader where it is built in: the same documents as PyYAML's, several times faster.
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _too_deep(path: str) -> ManifestError:
    return ManifestError(path, f"nested more than {MAX_DEPTH} levels deep")


def check_depth(value: Any, path: str = "") -> None:
    """Refuse a parsed document nested more than ``MAX_DEPTH`` collections deep."""
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


class _Frame:
    """An open mapping or list of the YAML event stream."""

    __slots__ = ("anchor", "expecting_key", "is_mapping", "key", "nodes_before", "path")

    def __init__(self, path: str, is_mapping: bool, anchor: str | None, nodes_before: int) -> None:
        self.path = path
        self.is_mapping = is_mapping
        self.key: str | int = "" if is_mapping else 0
        self.expecting_key = True
        self.anchor = anchor
        self.nodes_before = nodes_before


class _Scan:
    """Follows a YAML event stream (PyYAML's parser is a state machine, not recursive),
    keeping the path of the current value, the depth, and how many values the stream
    stands for once aliases are expanded."""

    def __init__(self) -> None:
        self.open: list[_Frame] = []
        self.nodes = 0
        self.anchor_sizes: dict[str, int] = {}

    def _path(self) -> str:
        if not self.open:
            return ""
        frame = self.open[-1]
        if frame.is_mapping and frame.expecting_key:
            return join(frame.path, "<key>")
        return join(frame.path, frame.key)

    def _value_done(self) -> None:
        if not self.open:
            return
        frame = self.open[-1]
        if frame.is_mapping:
            frame.expecting_key = not frame.expecting_key
        else:
            frame.key = int(frame.key) + 1

    def _count(self, n: int) -> None:
        self.nodes += n
        if self.nodes > MAX_YAML_NODES:
            raise ManifestError(
                self._path(), f"stands for more than {MAX_YAML_NODES} values once its aliases are expanded"
            )

    def event(self, event: yaml.Event) -> None:
        if isinstance(event, yaml.ScalarEvent):
            self._count(1)
            if event.anchor:
                self.anchor_sizes[event.anchor] = 1
            if self.open and self.open[-1].is_mapping and self.open[-1].expecting_key:
                self.open[-1].key = event.value
            self._value_done()
        elif isinstance(event, yaml.AliasEvent):
            self._count(self.anchor_sizes.get(event.anchor, 1))
            self._value_done()
        elif isinstance(event, yaml.CollectionStartEvent):
            if len(self.open) >= MAX_DEPTH:
                raise _too_deep(self._path())
            self._count(1)
            is_mapping = isinstance(event, yaml.MappingStartEvent)
            self.open.append(_Frame(self._path(), is_mapping, event.anchor, self.nodes))
        elif isinstance(event, yaml.CollectionEndEvent):
            frame = self.open.pop()
            if frame.anchor:
                self.anchor_sizes[frame.anchor] = self.nodes - frame.nodes_before + 1
            self._value_done()


def load_yaml_documents(text: str) -> list[Any]:
    """Every non-empty document of a YAML (or JSON) stream, once its shape is known to be bounded.

    Raises ``ManifestError`` naming the field nested past ``MAX_DEPTH`` or where the
    stream passes ``MAX_YAML_NODES`` values (marked with its document's index when
    that is not the first), and ``yaml.YAMLError`` for text that is not YAML.
    """
    scan = _Scan()
    document = -1
    for event in yaml.parse(text, Loader=_LOADER):
        if isinstance(event, yaml.DocumentStartEvent):
            document += 1
        try:
            scan.event(event)
        except ManifestError as exc:
            raise (exc.in_document(document) if document > 0 else exc) from None
    return [doc for doc in yaml.load_all(text, Loader=_LOADER) if doc is not None]
