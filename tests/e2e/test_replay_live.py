"""After a live run, `muster replay` re-derives every recorded cycle, from NATS and from Postgres."""

from __future__ import annotations

import json

import pytest

from tests.e2e.conftest import SCENARIOS, muster, status
from tests.polling import wait_for

pytestmark = [pytest.mark.nats, pytest.mark.postgres, pytest.mark.slow]


def test_replay_of_a_live_run_finds_no_divergence_from_either_source(live, tmp_path):
    muster(live, "apply", "-f", str(SCENARIOS / "two-queues-gang-and-fraction.yaml"))
    wait_for(
        lambda: all(j["status"] == "running" for j in status(live)["jobs"].values()) or None,
        what="jobs running",
    )

    def projected_everything():
        nats = json.loads(muster(live, "replay", "--json").stdout)
        pg = json.loads(muster(live, "replay", "--source", "postgres", "--json").stdout)
        return (nats, pg) if nats["events"] == pg["events"] else None

    nats, pg = wait_for(projected_everything, what="projector to catch up")
    for report in (nats, pg):
        assert report["cycles"] >= 1 and report["divergences"] == 0 and report["first_divergence"] is None
    saved = tmp_path / "log.jsonl"
    muster(live, "replay", "--save", str(saved))
    offline = json.loads(muster(live, "replay", "--log", str(saved), "--json").stdout)
    assert offline["cycles"] == nats["cycles"] and offline["divergences"] == 0
