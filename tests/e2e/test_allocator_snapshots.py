"""A restarted allocator starts from its pool's newest snapshot and the log's tail, and decides as before."""

from __future__ import annotations

import json

import pytest
from muster.events import BindRequested, CycleCompleted, PodBound
from muster.runtime.settings import Settings
from muster.runtime.system import running_system
from muster.scheduler.fold import fold_name

from tests.e2e.conftest import SERVICE_ENV, log_of, muster, run, status
from tests.e2e.snapshot_steps import SNAPSHOT_ENV, first_jobs_running, jobs, running, snapshots_of
from tests.polling import wait_for

pytestmark = [pytest.mark.nats, pytest.mark.postgres, pytest.mark.slow]

WITHOUT_ALLOCATOR = ("projector", "queue_controller", "podgrouper", "binder")


def pool_snapshots(system) -> list[int]:
    return run(snapshots_of(system, fold_name("default")))


def test_a_restarted_allocator_resumes_from_its_snapshot_and_places_on_what_the_snapshot_holds(
    tmp_path, servers, prefix
):
    settings = Settings(
        home=tmp_path / "home", nats_url=servers.nats_url, pg_dsn=servers.pg_dsn, prefix=prefix
    )
    with running_system(settings, services=WITHOUT_ALLOCATOR, service_env=SERVICE_ENV) as live:
        live.start_service("allocator", env={**SNAPSHOT_ENV, "MUSTER_INSTANCE": "first"})
        first = first_jobs_running(live, tmp_path)
        wait_for(lambda: pool_snapshots(live), what="a snapshot of the pool")
        live.stop_service("allocator")

        # Only one GPU is left: a restarted allocator that forgot the first jobs would place two.
        live.start_service("allocator", key="allocator-2", env={**SNAPSHOT_ENV, "MUSTER_INSTANCE": "second"})
        second = ["second-0", "second-1"]
        muster(live, "submit", "-f", str(jobs(tmp_path, second)))
        wait_for(lambda: running(live, ["second-0"]), what="the job that fits running")
        log = live.processes["allocator-2"].log.read_text()
        assert "restored its state at sequence" in log
        assert status(live)["jobs"]["second-1"]["status"] == "pending"
        events = [e for m in run(log_of(live)) for e in m.events]
        binds = [e for e in events if isinstance(e, BindRequested)]
        assert sorted(b.job for b in binds) == sorted([*first, "second-0"])
        assert len([e for e in events if isinstance(e, PodBound)]) == 4

        # Replay checks every snapshot against the log, and a window starts from the newest before it.
        whole = json.loads(muster(live, "replay", "--json").stdout)
        assert whole["divergences"] == 0 and whole["snapshot_mismatches"] == []
        assert whole["snapshots_checked"] >= 1
        watermarks = sorted(e.watermark for e in events if isinstance(e, CycleCompleted))
        taken = pool_snapshots(live)
        before = max(seq for seq in taken if seq < watermarks[-1])
        first_inside = min(w for w in watermarks if w > before)
        window = json.loads(muster(live, "replay", "--from", str(before + 1), "--json").stdout)
        # The state just before the window's first cycle: the newest snapshot at or before its watermark.
        assert window["started_from"] == {"default": max(seq for seq in taken if seq <= first_inside)}
        assert window["divergences"] == 0 and window["cycles"] >= 1
        assert window["events"] < whole["events"]
