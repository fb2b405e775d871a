"""Pod output over core NATS request/reply: ``muster logs`` asks the agent of the pod's node.

Logs are not facts, so they stay out of the stream: each agent answers on
``Subjects.agent_logs(node)`` with one chunk of a pod's log file at a time.
"""

from __future__ import annotations

from pathlib import Path

import msgspec

MAX_CHUNK = 256 * 1024


class LogRequest(msgspec.Struct, frozen=True, kw_only=True):
    job: str
    pod: int
    owner: str = ""
    """The tenant whose job it is ('' for the system's own): the one the log of that name is asked of."""
    offset: int = 0
    limit: int = MAX_CHUNK


class LogChunk(msgspec.Struct, frozen=True, kw_only=True):
    found: bool
    data: bytes = b""
    next: int = 0
    """Offset to ask for next."""
    size: int = 0
    running: bool = False
    """The agent still runs the pod: more may come."""


def read_chunk(path: Path, request: LogRequest, running: bool) -> LogChunk:
    """One chunk of the log file at ``path`` from ``request.offset``."""
    try:
        with open(path, "rb") as f:
            size = f.seek(0, 2)
            f.seek(max(0, min(request.offset, size)))
            data = f.read(max(0, min(request.limit, MAX_CHUNK)))
    except FileNotFoundError:
        return LogChunk(found=False, running=running)
    start = max(0, min(request.offset, size))
    return LogChunk(found=True, data=data, next=start + len(data), size=size, running=running)


encode = msgspec.json.encode
decode_request = msgspec.json.Decoder(LogRequest).decode
decode_chunk = msgspec.json.Decoder(LogChunk).decode
