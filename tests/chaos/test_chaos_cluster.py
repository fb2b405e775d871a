"""A three-server JetStream cluster loses a server in the middle of two thousand jobs, and nothing shows it.

The stream, the lease bucket and the snapshot stores are kept on all three servers
(``MUSTER_STREAM_REPLICAS=3``); one server is crashed (SIGKILL) while jobs are being submitted and
started again later. The run's audit then holds as on a single server: nothing submitted is lost,
no pod is bound twice, no device is over capacity, the projection equals a fresh projection of the
log, and replay finds every decision again.
"""

from __future__ import annotations

import pytest
from muster.chaos.faults import NATS_RESTART
from muster.chaos.run import ChaosOptions, render, run_chaos

pytestmark = [pytest.mark.nats, pytest.mark.postgres, pytest.mark.slow, pytest.mark.timeout(420)]


def test_a_cluster_that_loses_a_server_mid_run_loses_nothing(tmp_path):
    options = ChaosOptions(
        jobs=2000,
        seed=3,
        nodes=32,
        window=15.0,
        min_duration=0.5,
        max_duration=2.0,
        settle_timeout=240.0,
        nats_restarts=1,
        nats_servers=3,
        faults=(NATS_RESTART,),
        home=tmp_path,
    )
    result = run_chaos(options, verbose=False)
    assert result.ok, render(result)
    counts = result.counts
    assert counts["stream replicas"] == 3 and counts["nats restarts"] == 1
    assert counts["jobs"] == 2000 and counts["jobs completed"] == 2000 and counts["replay divergences"] == 0
