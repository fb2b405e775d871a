"""YAML read with bounds on its shape, before anything recursive builds it.

PyYAML builds a document recursively, so one nested a few thousand levels
deep ends in a ``RecursionError``, and a few lines of anchors can stand for
billions of values once aliases are expanded. ``load_yaml_documents`` first
follows the parser's event stream (a state machine, not recursive), counting
depth and values, and refuses with the path of the first field past a bound.
Manifests (the podgrouper) and scenario files read through it.
"""

from __future__ import annotations

from typing import Any

import yaml

from muster.field_paths import join

# libyaml's safe loader where it is built in: the same documents as PyYAML's, several times faster.
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class YamlTooBig(ValueError):
    """A YAML stream past a bound; ``path`` names the field, ``document`` its document's index."""

    def __init__(self, path: str, message: str, document: int = 0) -> None:
        self.path = path
        self.message = message
        self.document = document
        super().__init__(f"{path or '<document>'}: {message}")


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

    def __init__(self, max_depth: int, max_nodes: int) -> None:
        self.max_depth = max_depth
        self.max_nodes = max_nodes
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
        if self.nodes > self.max_nodes:
            raise YamlTooBig(
                self._path(), f"stands for more than {self.max_nodes} values once its aliases are expanded"
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
            if len(self.open) >= self.max_depth:
                raise YamlTooBig(self._path(), f"nested more than {self.max_depth} levels deep")
            self._count(1)
            is_mapping = isinstance(event, yaml.MappingStartEvent)
            self.open.append(_Frame(self._path(), is_mapping, event.anchor, self.nodes))
        elif isinstance(event, yaml.CollectionEndEvent):
            frame = self.open.pop()
            if frame.anchor:
                self.anchor_sizes[frame.anchor] = self.nodes - frame.nodes_before + 1
            self._value_done()


def load_yaml_documents(text: str, *, max_depth: int, max_nodes: int) -> list[Any]:
    """Every non-empty document of a YAML (or JSON) stream, once its shape is known to be bounded.

    Raises ``YamlTooBig`` naming the field nested past ``max_depth`` collections or
    where the stream passes ``max_nodes`` values, and ``yaml.YAMLError`` for text that
    is not YAML.
    """
    scan = _Scan(max_depth, max_nodes)
    document = -1
    for event in yaml.parse(text, Loader=_LOADER):
        if isinstance(event, yaml.DocumentStartEvent):
            document += 1
        try:
            scan.event(event)
        except YamlTooBig as exc:
            raise YamlTooBig(exc.path, exc.message, max(document, 0)) from None
    return [doc for doc in yaml.load_all(text, Loader=_LOADER) if doc is not None]
