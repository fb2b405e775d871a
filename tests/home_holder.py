"""Another process holding a home's lock, as a second `muster up` or a running demo would."""

from __future__ import annotations

import contextlib
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

_HOLD = (
    "import sys, time; from pathlib import Path; from muster.runtime.home_lock import home_lock\n"
    "with home_lock(Path(sys.argv[1])):\n    print('held', flush=True); time.sleep(600)"
)


@contextlib.contextmanager
def home_held_elsewhere(home: Path) -> Iterator[subprocess.Popen]:
    """A process that holds ``home``'s lock until the block ends, then is killed (never releasing it)."""
    holder = subprocess.Popen([sys.executable, "-c", _HOLD, str(home)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        yield holder
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait(10)
