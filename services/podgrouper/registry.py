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

    def register(self, group: str, kind: str, grouper: GrouperFn, *, version: str = ANY_VERSION) -> None:
        """Route ``group/version`` ``kind`` to ``grouper``; a later call replaces an earlier one."""
        self._plugins[(group, version, kind)] = grouper

    def lookup(self, api_version: str, kind: str) -> Entry:
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
