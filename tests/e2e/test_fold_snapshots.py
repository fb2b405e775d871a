"""A restarted binder and a restarted queue-controller start from their snapshots and answer as before."""

from __future__ import annotations

from collections import Counter

import pytest
from muster.events import PodBound, QueueUpserted
from muster.runtime.settings import Settings
from muster.runtime.system import running_system

from tests.e2e.conftest import SERVICE_ENV, events_on, log_of, muster, run, status
from tests.e2e.snapshot_steps import CLUSTER, SNAPSHOT_ENV, first_jobs_running, jobs, running, snapshots_of
from tests.polling import wait_for

pytestmark = [pytest.mark.nats, pytest.mark.postgres, pytest.mark.slow]


def settings_for(tmp_path, servers, prefix) -> Settings:
    return Settings(home=tmp_path / "home", nats_url=servers.nats_url, pg_dsn=servers.pg_dsn, prefix=prefix)


def test_a_restarted_binder_resumes_from_its_snapshot_and_confirms_no_bind_twice(tmp_path, servers, prefix):
    others = ("projector", "queue_controller", "podgrouper", "allocator")
    with running_system(
        settings_for(tmp_path, servers, prefix), services=others, service_env=SERVICE_ENV
    ) as live:
        live.start_service("binder", env=SNAPSHOT_ENV)
        first = first_jobs_running(live, tmp_path)
        wait_for(lambda: run(snapshots_of(live, "binder", "binder")), what="a snapshot of the binder")
        live.stop_service("binder")

        # Binds decided while no binder runs wait on the log for the restarted one.
        second = ["second-0", "second-1"]
        muster(live, "submit", "-f", str(jobs(tmp_path, second, gpus=1)))
        live.start_service("binder", key="binder-2", env=SNAPSHOT_ENV)
        wait_for(lambda: running(live, ["second-0"]), what="the job that fits running")
        assert "binder: restored its state at sequence" in live.processes["binder-2"].log.read_text()
        assert status(live)["jobs"]["second-1"]["status"] == "pending"
        bound = Counter(
            (e.job, e.pod) for m in run(log_of(live)) for e in m.events if isinstance(e, PodBound)
        )
        assert sorted(bound) == sorted((job, 0) for job in [*first, "second-0"])
        assert set(bound.values()) == {1}


def test_a_restarted_queue_controller_reads_its_book_from_its_snapshot(tmp_path, servers, prefix):
    others = ("projector", "podgrouper", "allocator", "binder")
    with running_system(
        settings_for(tmp_path, servers, prefix), services=others, service_env=SERVICE_ENV
    ) as live:
        live.start_service("queue_controller", env=SNAPSHOT_ENV)
        cluster = tmp_path / "cluster.yaml"
        cluster.write_text(CLUSTER)
        muster(live, "apply", "-f", str(cluster))
        muster(live, "submit", "-f", str(jobs(tmp_path, ["a-0", "a-1", "a-2"])))
        wait_for(lambda: running(live, ["a-0", "a-1", "a-2"]), what="the jobs running")
        # The book is read, and a snapshot taken, at start.
        live.stop_service("queue_controller")
        live.start_service("queue_controller", key="qc-2", env=SNAPSHOT_ENV)
        wait_for(
            lambda: run(snapshots_of(live, "queue-controller", "queue-controller")),
            what="a snapshot of the book",
        )
        live.stop_service("qc-2")
        live.start_service("queue_controller", key="qc-3", env=SNAPSHOT_ENV)
        wait_for(
            lambda: (
                "queue-controller: restored its state at sequence" in live.processes["qc-3"].log.read_text()
            ),
            what="the book restored",
        )

        # The restored book knows the queues: a change to one keeps its place, a new one comes after.
        cluster.write_text(CLUSTER.replace("quota: 4", "quota: 3") + "  - name: later\n")
        muster(live, "apply", "-f", str(cluster))

        def answers():
            return [
                e.queue
                for e in run(events_on(live, live.endpoints.subjects.queues))
                if isinstance(e, QueueUpserted)
            ]

        upserts = wait_for(lambda: answers() if len(answers()) >= 4 else None, what="the new answers")
        orders = {q.name: q.order for q in upserts}
        team = [q for q in upserts if q.name == "team"]
        assert team[-1].resources["gpu"].quota == 3 and team[-1].order == team[0].order
        assert orders["later"] > max(o for name, o in orders.items() if name != "later")
