"""Field paths as error messages spell them: ``jobs[2].pods``, ``spec.replicas``."""

from __future__ import annotations


def join(path: str, key: str | int) -> str:
    """``path`` extended by a key (``a.b``) or a list index (``a[0]``); ``join("", "a")`` is ``a``."""
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else key
