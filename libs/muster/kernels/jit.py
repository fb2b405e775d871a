"""How muster compiles its kernels: Numba's ``njit``, with a disk cache that cannot go stale.

Numba checks a cached kernel against the file that defines it and nothing else. A kernel that calls
a kernel of another module (the batch path calls placement, capacity, ordering and gang rules; every
kernel compiles in ``muster.tolerances``) is loaded from the cache as it was compiled, even after the
callee changed: a changed argument list or rule runs the old code in silence. So every kernel of
ours is cached in a folder named by a digest of all the modules that define or feed one; a change to
any of them starts a fresh cache, and an unchanged tree keeps reusing its own. The folder sits under
``NUMBA_CACHE_DIR`` when that is set, else beside the package.

Every module that defines a kernel imports ``njit`` from here, so the folder is chosen before the
first kernel is declared.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import numba
from numba import njit

__all__ = ["SOURCES", "cache_folder", "njit"]

_PACKAGE = Path(__file__).resolve().parents[1]
# Every module that defines a kernel or a constant compiled into one (a test holds the list to the
# modules that import ``njit`` from here).
SOURCES = (
    "kernels",
    "tolerances.py",
    "scheduler/batch.py",
    "scheduler/capacity.py",
    "scheduler/gang.py",
    "scheduler/ordering.py",
)


def _digest() -> str:
    digest = hashlib.sha256()
    for part in SOURCES:
        root = _PACKAGE / part
        for path in [root] if root.is_file() else sorted(root.rglob("*.py")):
            digest.update(path.relative_to(_PACKAGE).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def cache_folder() -> Path:
    """Where this tree's compiled kernels are cached."""
    base = os.environ.get("NUMBA_CACHE_DIR") or str(_PACKAGE / "__pycache__")
    return Path(base) / f"kernels-{_digest()}"


numba.config.CACHE_DIR = str(cache_folder())
