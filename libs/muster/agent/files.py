"""File and folder names an agent makes from names: readable, bounded, and never the same for two.

A pod's folder, log and exit file are named for who it is, (owner, job, pod):
two teams' jobs must never share a folder (starting one would wipe the
other's HOME) nor a log. Names are checked at the door (``muster.names``),
but a file name has its own limit (255 bytes), and what an agent finds on
disk or in an old log may predate the check. So a file name is the readable
start of the name, cut short, then ``_`` and a digest of the exact parts:
the digest tells any two apart, and the ``_``, which no valid job or node
name holds, keeps it from ever being another's plain name.
"""

from __future__ import annotations

import hashlib
import json
import re

READABLE = 96
"""Characters of the name kept in front of the digest."""
DIGEST_BYTES = 12

_UNSAFE = re.compile(r"[^a-z0-9.-]")


def file_stem(readable: str, *exact: str) -> str:
    """A bounded file name for the parts ``exact``, safe on any file system: ``readable`` cut to
    ``READABLE`` characters, ``_``, and a digest of exactly the parts (25 characters)."""
    shown = _UNSAFE.sub("_", readable[:READABLE])
    # JSON keeps the parts apart: ("a-b", "c") and ("a", "b-c") read alike but digest differently.
    data = json.dumps(exact, ensure_ascii=False).encode("utf-8", "surrogatepass")
    return f"{shown}_{hashlib.blake2b(data, digest_size=DIGEST_BYTES).hexdigest()}"


def pod_stem(owner: str, job: str, pod: int) -> str:
    """What a pod's folder, log and exit file are named: one name per (owner, job, pod)."""
    return file_stem(f"{job}-{pod}", owner, job, str(pod))
