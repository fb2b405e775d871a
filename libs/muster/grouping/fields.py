"""Typed reads from a parsed manifest, each failure naming the field path."""

from __future__ import annotations

from typing import Any

from muster.field_paths import join
from muster.grouping.errors import ManifestError
from muster.grouping.limits import check_count


def _type_name(value: object) -> str:
    return "null" if value is None else type(value).__name__


def as_map(value: Any, path: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ManifestError(path, f"expected a mapping, got {_type_name(value)}")
    return value


def get_map(obj: dict[str, Any], key: str, path: str) -> dict[str, Any]:
    """``obj[key]`` as a mapping; absent or null reads as empty."""
    value = obj.get(key)
    if value is None:
        return {}
    if isinstance(value, dict):  # the usual case: no field path to build
        return value
    return as_map(value, join(path, key))


def require_map(obj: dict[str, Any], key: str, path: str) -> dict[str, Any]:
    value = obj.get(key)
    if value is None:
        raise ManifestError(join(path, key), "required field is missing")
    if isinstance(value, dict):  # the usual case: no field path to build
        return value
    return as_map(value, join(path, key))


def get_list(obj: dict[str, Any], key: str, path: str) -> list[Any]:
    value = obj.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise ManifestError(join(path, key), f"expected a list, got {_type_name(value)}")
    return value


def get_int(obj: dict[str, Any], key: str, path: str, default: int | None = None) -> int | None:
    """``obj[key]`` as an int (a YAML integer, or a string of digits)."""
    value = obj.get(key)
    if value is None:
        return default
    if isinstance(value, bool):
        raise ManifestError(join(path, key), f"expected an integer, got {value!r}")
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            pass
    raise ManifestError(join(path, key), f"expected an integer, got {_type_name(value)} {value!r}")


def get_count(obj: dict[str, Any], key: str, path: str, default: int, *, bounded: bool = True) -> int:
    """A replica-like count: an integer that must not be negative and, unless ``bounded``
    is off (a Job's ``completions`` counts runs, not pods at once), not above ``MAX_PODS``."""
    value = get_int(obj, key, path, default)
    assert value is not None
    if value < 0:
        raise ManifestError(join(path, key), f"must not be negative, got {value}")
    return check_count(value, join(path, key)) if bounded else value


def get_str(obj: dict[str, Any], key: str, path: str, default: str | None = None) -> str | None:
    value = obj.get(key)
    if value is None:
        return default
    if not isinstance(value, str):
        raise ManifestError(join(path, key), f"expected a string, got {_type_name(value)} {value!r}")
    return value


def get_bool(obj: dict[str, Any], key: str, path: str, default: bool = False) -> bool:
    value = obj.get(key)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise ManifestError(join(path, key), f"expected true or false, got {_type_name(value)} {value!r}")
    return value


def string_map(obj: dict[str, Any], key: str, path: str) -> dict[str, str]:
    """Labels, annotations, node selectors: a mapping of strings to strings."""
    raw = get_map(obj, key, path)
    out: dict[str, str] = {}
    for name, value in raw.items():
        if not isinstance(value, str):
            raise ManifestError(
                join(join(path, key), str(name)),
                f"expected a string value, got {_type_name(value)} {value!r}",
            )
        out[str(name)] = value
    return out
