"""The one error a scenario or queue file can raise: what is wrong, and where."""

from __future__ import annotations

import re
from typing import TypeVar

import msgspec

from muster.field_paths import join

T = TypeVar("T")


class ScenarioError(ValueError):
    """A file that is not a valid scenario; ``path`` names the bad field
    (``jobs[2].pods[0].resources.gpu``), ``source`` the file if known."""

    def __init__(self, path: str, message: str, source: str = "") -> None:
        self.path = path
        self.message = message
        self.source = source
        super().__init__(str(self))

    def __str__(self) -> str:
        where = self.path or "(top level)"
        prefix = f"{self.source}: " if self.source else ""
        return f"{prefix}{where}: {self.message}"

    def in_file(self, source: str) -> ScenarioError:
        """The same error, naming the file it came from."""
        return ScenarioError(self.path, self.message, source)


_AT = re.compile(r"^(?P<what>.*?)(?: - at `\$(?P<at>[^`]*)`)?$", re.S)
_MISSING = re.compile(r"^Object missing required field `(?P<key>[^`]+)`$")
_UNKNOWN = re.compile(r"^Object contains unknown field `(?P<key>[^`]+)`$")


def from_data(data: object, type_: type[T], path: str = "") -> T:
    """``data`` (parsed YAML/JSON) as ``type_``; a mismatch raises
    ``ScenarioError`` naming the field path below ``path``."""
    try:
        return msgspec.convert(data, type_)
    except msgspec.ValidationError as exc:
        raise _translate(str(exc), path) from None


def _translate(text: str, base: str) -> ScenarioError:
    match = _AT.match(text)
    assert match is not None  # the pattern matches any text
    what, at = match.group("what"), match.group("at") or ""
    where = base + at if base or not at.startswith(".") else at[1:]
    if missing := _MISSING.match(what):
        return ScenarioError(join(where, missing.group("key")), "required field is missing")
    if unknown := _UNKNOWN.match(what):
        return ScenarioError(join(where, unknown.group("key")), f"unknown key {unknown.group('key')!r}")
    return ScenarioError(where, what[:1].lower() + what[1:])
