"""How many NATS servers keep each of the system's streams and buckets (``MUSTER_STREAM_REPLICAS``).

1 on a single server (the embedded default); 3 on a three-server cluster, so that the log, the
leases and the snapshots all outlive the loss of any one server. Read where each is created: a
stream made before the setting changed keeps its replicas until an operator edits it.
"""

from __future__ import annotations

import os

ENV = "MUSTER_STREAM_REPLICAS"
MAX = 5  # JetStream's own ceiling


def stream_replicas(env: dict[str, str] | None = None) -> int:
    """The configured replica count; a bad value is an error that names the variable."""
    raw = (os.environ if env is None else env).get(ENV, "").strip()
    if not raw:
        return 1
    try:
        replicas = int(raw)
    except ValueError:
        raise ValueError(f"{ENV}: expected a whole number from 1 to {MAX}, got {raw!r}") from None
    if not 1 <= replicas <= MAX:
        raise ValueError(f"{ENV}: expected a whole number from 1 to {MAX}, got {replicas}")
    return replicas
