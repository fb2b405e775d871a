"""Which plugin groups which kind: an explicit table keyed by (group, kind).

A lookup tries the exact ``(group, version, kind)``, then ``(group, "*", kind)``;
anything else goes to the default plugin. Built-in plugins are installed when
this module is imported; others are added with ``register`` (the plain muster
job kind is registered from outside this package).
"""

from __future__ import annotations

from dataclasses import dataclass

from services.podgrouper.model import GrouperFn

ANY_VERSION = "*"
# Kinds come from submitted manifests: bound what the lookup remembers of them.
_MAX_REMEMBERED = 1024


def split_api_version(api_version: str) -> tuple[str, str]:
    """``"apps/v1"`` to ``("apps", "v1")``; the core group is ``""``."""
    group, _, version = api_version.rpartition("/")
    return group, version


@dataclass(frozen=True)
class Entry:
    grouper: GrouperFn
    known: bool
    """False only for the default plugin: the kind is not one muster knows."""


class Registry:
    """Plugins keyed by (group, version, kind); ``version`` may be ``"*"``."""

    def __init__(self, default: GrouperFn) -> None:
        self._plugins: dict[tuple[str, str, str], GrouperFn] = {}
        self._default = default
        # Every manifest is looked up, and a submission repeats a few kinds: answers are
        # remembered by (apiVersion, kind) until the table changes.
        self._entries: dict[tuple[str, str], Entry] = {}

    def register(self, group: str, kind: str, grouper: GrouperFn, *, version: str = ANY_VERSION) -> None:
        """Route ``group/version`` ``kind`` to ``grouper``; a later call replaces an earlier one."""
        self._plugins[(group, version, kind)] = grouper
        self._entries.clear()

    def lookup(self, api_version: str, kind: str) -> Entry:
        """The plugin for ``api_version`` ``kind``: exact version, wildcard, else the default."""
        entry = self._entries.get((api_version, kind))
        if entry is None:
            if len(self._entries) >= _MAX_REMEMBERED:
                self._entries.clear()
            entry = self._entries[(api_version, kind)] = self._find(api_version, kind)
        return entry

    def _find(self, api_version: str, kind: str) -> Entry:
        group, version = split_api_version(api_version)
        for key in ((group, version, kind), (group, ANY_VERSION, kind)):
            if key in self._plugins:
                return Entry(self._plugins[key], known=True)
        return Entry(self._default, known=False)

    def kinds(self) -> list[tuple[str, str, str]]:
        """Every registered (group, version, kind), sorted."""
        return sorted(self._plugins)


def default_registry() -> Registry:
    """A fresh registry holding every built-in plugin."""
    from services.podgrouper.groupers import install
    from services.podgrouper.groupers.default import group_unknown

    registry = Registry(default=group_unknown)
    install(registry)
    return registry


REGISTRY = default_registry()


def register(group: str, kind: str, grouper: GrouperFn, *, version: str = ANY_VERSION) -> None:
    """Add a plugin to the registry ``group_manifests`` uses."""
    REGISTRY.register(group, kind, grouper, version=version)
