"""The fault suite, bounded for CI: 300 jobs, each service killed once, NATS restarted thrice, Postgres down 5 s."""

from __future__ import annotations

import pytest
from muster.chaos.run import ChaosOptions, render, run_chaos

pytestmark = [pytest.mark.nats, pytest.mark.postgres, pytest.mark.slow, pytest.mark.timeout(420)]


def test_a_loaded_system_survives_kills_and_server_restarts_with_a_sound_log(tmp_path):
    options = ChaosOptions(
        jobs=300,
        seed=7,
        nodes=16,
        window=15.0,
        pg_outage=5.0,
        min_duration=0.5,
        max_duration=2.0,
        settle_timeout=240.0,
        nats_restarts=3,
        home=tmp_path,
    )
    result = run_chaos(options, verbose=False)
    assert result.ok, render(result)
    counts = result.counts
    assert (counts["kills"], counts["nats restarts"], counts["postgres outages"]) == (5, 3, 1)
    assert counts["jobs"] == 300 and counts["binds"] >= 300 and counts["replay divergences"] == 0
