"""A bounded stream: archived, snapshotted history leaves it, and nothing is lost."""

from __future__ import annotations

import json

import pytest
from muster.bus import NatsBus
from muster.runtime.settings import Settings
from muster.runtime.system import running_system

from tests.e2e.conftest import SERVICE_ENV, muster, projected, run, status
from tests.e2e.snapshot_steps import first_jobs_running, jobs, running
from tests.polling import wait_for

pytestmark = [pytest.mark.nats, pytest.mark.postgres, pytest.mark.slow]

WITHOUT_ALLOCATOR = ("projector", "queue_controller", "podgrouper", "binder")
RETENTION_ENV = {
    **SERVICE_ENV,
    "MUSTER_STREAM_KEEP": "5",
    "MUSTER_RETENTION_INTERVAL": "0.2",
    "MUSTER_SNAPSHOT_EVERY": "5",
    "MUSTER_SNAPSHOT_MIN_INTERVAL": "0",
    # The folds this system runs (no node monitor: the nodes are declared, not watched).
    "MUSTER_RETENTION_REQUIRES": "allocator-default,binder,queue-controller",
}


LAST_CYCLE = (
    "SELECT (payload->>'watermark')::bigint AS watermark FROM events"
    " WHERE type = 'CycleCompleted' ORDER BY stream_seq DESC LIMIT 1"
)


async def first_seq(system) -> int:
    bus = await NatsBus.connect(system.endpoints.nats_url, system.endpoints.subjects, service="test")
    try:
        return await bus.first_seq()
    finally:
        await bus.close()


def test_a_purged_stream_still_restarts_the_allocator_and_the_archive_replays_all_of_history_or_a_window(
    tmp_path, servers, prefix
):
    settings = Settings(
        home=tmp_path / "home", nats_url=servers.nats_url, pg_dsn=servers.pg_dsn, prefix=prefix
    )
    with running_system(settings, services=WITHOUT_ALLOCATOR, service_env=RETENTION_ENV) as live:
        live.start_service("allocator", env={"MUSTER_INSTANCE": "first"})
        first_jobs_running(live, tmp_path)
        wait_for(lambda: run(first_seq(live)) > 1, what="the stream purged below its snapshot")
        live.stop_service("allocator")

        # The nodes, the queue and the first jobs are gone from the stream: only the snapshot has them.
        live.start_service("allocator", key="allocator-2", env={"MUSTER_INSTANCE": "second"})
        muster(live, "submit", "-f", str(jobs(tmp_path, ["second-0", "second-1"])))
        wait_for(lambda: running(live, ["second-0"]), what="the job that fits running")
        assert "restored its state at sequence" in live.processes["allocator-2"].log.read_text()
        assert status(live)["jobs"]["second-1"]["status"] == "pending"

        archive = json.loads(muster(live, "replay", "--source", "postgres", "--json").stdout)
        assert archive["divergences"] == 0 and archive["cycles"] >= 2
        stream = json.loads(muster(live, "replay", "--json", check=False).stdout)
        assert stream["divergences"] == 0 and stream["snapshot_mismatches"] == []

        # A window of the archive starts from a snapshot too, as a window of the stream does: its cost
        # follows the window, not the whole of history.
        (last,) = run(projected(live, LAST_CYCLE))
        window = ("replay", "--source", "postgres", "--from", str(last["watermark"]), "--json")
        from_archive = json.loads(muster(live, *window).stdout)
        assert from_archive["divergences"] == 0 and from_archive["cycles"] >= 1
        assert from_archive["started_from"]["default"] > 1
        assert from_archive["events"] < archive["events"]
