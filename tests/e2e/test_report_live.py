"""`muster report` on a live run reads the same figures from the stream as from the Postgres archive,
and what must match the simulation of the same trace does.

Live time is wall time and the simulator's is its own, so waits and the window differ between them;
what cannot differ is which jobs ran and how long each pod ran: every job here has a run time and
nothing is evicted. A live pod's run is measured from its PodBound to its PodCompleted, which the
binder reports at its next check of run times (every 0.2 s) plus whatever the loaded machine adds; we
allow each pod one second of it, times its GPUs.
"""

from __future__ import annotations

import json

import pytest

from tests.e2e.conftest import SCENARIOS, muster, status
from tests.polling import wait_for

pytestmark = [pytest.mark.nats, pytest.mark.postgres, pytest.mark.slow]

TRACE = SCENARIOS / "report-trace.yaml"
SLACK_SECONDS_PER_POD = 1.0
GPU_SECONDS = {"team-a": 4 * 1 * 2 + 1 * 4 * 1, "team-b": 2 * 2 * 2}
"""Pods x GPUs x run time of each queue's jobs."""
SLACK_GPU_SECONDS = {
    "team-a": (4 * 1 + 1 * 4) * SLACK_SECONDS_PER_POD,
    "team-b": 2 * 2 * SLACK_SECONDS_PER_POD,
}


def report(system, *args: str) -> dict:
    return json.loads(muster(system, "report", "--json", *args).stdout)


def test_a_live_runs_report_is_the_same_from_the_stream_and_the_archive_and_matches_the_simulation(live):
    muster(live, "apply", "-f", str(TRACE))
    wait_for(
        lambda: (
            (jobs := status(live)["jobs"])
            and len(jobs) == 3
            and all(j["status"] == "completed" for j in jobs.values())
        ),
        what="every job completed",
    )

    def both_sources_agree():
        stream, archive = report(live), report(live, "--source", "postgres")
        return (stream, archive) if stream == archive else None

    stream, _ = wait_for(both_sources_agree, what="the archive to hold what the stream holds")
    simulated = report(live, str(TRACE))

    for doc in (stream, simulated):
        assert (doc["cluster"]["jobs"], doc["cluster"]["started"], doc["cluster"]["completed"]) == (3, 3, 3)
        assert doc["cluster"]["evictions"] == 0 and doc["deserved_from"] == "fair_share"
    for name, gpu_seconds in GPU_SECONDS.items():
        live_q, sim_q = stream["queues"][name], simulated["queues"][name]
        assert (live_q["jobs"], live_q["completed"]) == (sim_q["jobs"], sim_q["completed"])
        assert sim_q["gpu_hours_used"] == pytest.approx(gpu_seconds / 3600, abs=1e-6)
        assert live_q["gpu_hours_used"] == pytest.approx(
            gpu_seconds / 3600, abs=SLACK_GPU_SECONDS[name] / 3600
        )
    # a-2 waited for room in both: about the 2 s the first jobs ran.
    assert simulated["queues"]["team-a"]["wait_seconds"]["p99"] == 2.0
    assert stream["queues"]["team-a"]["wait_seconds"]["p99"] >= 2.0 - SLACK_SECONDS_PER_POD
