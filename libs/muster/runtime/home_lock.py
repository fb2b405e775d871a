"""One system per home: an exclusive lock on ``MUSTER_HOME`` while servers run under it.

Whatever starts servers or services under a home (``muster up``, ``muster
demo``, a replay of a stopped home) holds ``MUSTER_HOME/muster.lock``
with ``flock`` for as long as it runs. The kernel drops the lock when its
process ends, crash or not, so a killed owner never leaves a home locked.
A second owner is refused before it touches anything under the home: it
would otherwise stop the first one's Postgres (a leftover, as it sees it)
and overwrite its endpoints and logins. Commands that only talk to a
running system take no lock.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

LOCK_FILE = "muster.lock"

# A process may nest owners of one home (``running_system`` around ``embedded_servers``): a second
# flock of the same file from the same process would be refused like a stranger's, so each home's
# lock is taken once per process and counted.
_held: dict[Path, tuple[int, int]] = {}


class HomeLocked(RuntimeError):
    """Another process runs a system under this home."""

    def __init__(self, home: Path, pid: int | None):
        self.home = home
        self.pid = pid
        holder = f"process {pid}" if pid else "another process"
        super().__init__(
            f"MUSTER_HOME {home} is in use by {holder} (a running `muster up` or `muster demo`); "
            f"stop it first, or set MUSTER_HOME to another folder"
        )


def holder_pid(home: Path) -> int | None:
    """The pid recorded by the home's lock holder, if any was recorded."""
    try:
        return int((home / LOCK_FILE).read_text().strip() or 0) or None
    except (FileNotFoundError, ValueError):
        return None


@contextlib.contextmanager
def home_lock(home: Path) -> Iterator[None]:
    """Hold ``home``'s lock for the block; raises ``HomeLocked`` at once if another process holds it."""
    key = home.resolve()
    if key in _held:
        fd, depth = _held[key]
        _held[key] = (fd, depth + 1)
    else:
        home.mkdir(parents=True, exist_ok=True)
        fd = os.open(home / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise HomeLocked(home, holder_pid(home)) from None
        # The file is never removed: a process that opened it just before would lock a file that
        # no longer has a name, and a third would create another and lock that too.
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        _held[key] = (fd, 1)
    try:
        yield
    finally:
        fd, depth = _held[key]
        if depth > 1:
            _held[key] = (fd, depth - 1)
        else:
            del _held[key]
            os.ftruncate(fd, 0)
            os.close(fd)
