"""`muster up` restarts a service that dies; the restarted one picks up where the log says."""

from __future__ import annotations

import signal
import threading

import pytest
from muster.runtime.settings import Settings
from muster.runtime.system import running_system, wait_until_interrupted

pytestmark = [pytest.mark.nats, pytest.mark.postgres, pytest.mark.slow]


def test_a_killed_service_is_started_again(tmp_path, servers, prefix):
    settings = Settings(home=tmp_path, nats_url=servers.nats_url, pg_dsn=servers.pg_dsn, prefix=prefix)
    with running_system(settings, services=("projector", "podgrouper")) as system:
        first = system.processes["podgrouper"].proc.pid
        system.processes["podgrouper"].proc.send_signal(signal.SIGKILL)
        stopper = threading.Timer(6.0, lambda: signal.raise_signal(signal.SIGTERM))
        stopper.start()
        try:
            wait_until_interrupted(system, poll=0.1)
        finally:
            stopper.cancel()
        again = system.processes["podgrouper"]
        assert again.proc.pid != first and again.alive()
        assert again.service == "podgrouper" and system.processes["projector"].alive()
