"""Two pools, two allocators each: the leader of one pool dies, its standby takes over at once (long
before the dead leader's lease lapses), nothing binds twice."""

from __future__ import annotations

import signal

import pytest
from muster.events import BindRequested, LeaderElected, PodBound
from muster.runtime.settings import Settings
from muster.runtime.system import running_system

from tests.e2e.conftest import SCENARIOS, SERVICE_ENV, log_of, muster, run, status
from tests.polling import wait_for

pytestmark = [pytest.mark.nats, pytest.mark.postgres, pytest.mark.slow]

WITHOUT_ALLOCATOR = ("projector", "queue_controller", "podgrouper", "binder")
LEASE_TTL = 60.0
"""Long on purpose: a leader renews every third of it, so a dead leader's lease runs on for at least
40 s after the kill. A takeover sooner than that comes from seeing the leader gone, not from the lapse."""
SEEN_GONE_WITHIN = 30.0


def leaders(system) -> list[LeaderElected]:
    return [e for m in run(log_of(system)) for e in m.events if isinstance(e, LeaderElected)]


def second_wave(tmp_path):
    docs = []
    for pool in ("a", "b"):
        for i in range(3):
            docs.append(
                "apiVersion: muster.dev/v1\nkind: Job\n"
                f"metadata: {{name: {pool}-second-{i}}}\n"
                f"spec: {{queue: team, pool: {pool}, pods: [{{count: 1, resources: {{gpu: 1}}}}]}}\n"
            )
    path = tmp_path / "second-wave.yaml"
    path.write_text("---\n".join(docs))
    return path


def test_the_standby_takes_over_a_dead_leaders_pool_and_every_job_binds_exactly_once(
    tmp_path, servers, prefix
):
    settings = Settings(
        home=tmp_path / "home", nats_url=servers.nats_url, pg_dsn=servers.pg_dsn, prefix=prefix
    )
    env = {**SERVICE_ENV, "MUSTER_LEASE_TTL": str(LEASE_TTL)}
    with running_system(settings, services=WITHOUT_ALLOCATOR, service_env=env) as live:
        for pool in ("a", "b"):
            for i in (1, 2):
                live.start_service(
                    "allocator",
                    key=f"allocator-{pool}-{i}",
                    env={"MUSTER_POOL": pool, "MUSTER_INSTANCE": f"{pool}-{i}"},
                )
        muster(live, "apply", "-f", str(SCENARIOS / "two-pools.yaml"))
        first = ["a-first-1", "a-first-2", "b-first-1", "b-first-2"]
        wait_for(
            lambda: all(status(live)["jobs"].get(j, {}).get("status") == "running" for j in first),
            what="first wave",
        )
        elected = {e.pool: e for e in leaders(live)}
        assert set(elected) == {"a", "b"} and all(e.epoch == 1 for e in elected.values())
        dead = elected["a"].holder
        live.stop_service(f"allocator-{dead}", sig=signal.SIGKILL)

        takeover = wait_for(
            lambda: [e for e in leaders(live) if e.pool == "a" and e.epoch == 2],
            timeout=SEEN_GONE_WITHIN,
            what="the standby taking over while the dead leader's lease still runs",
        )
        assert len(takeover) == 1 and takeover[0].holder != dead and takeover[0].previous == dead

        muster(live, "submit", "-f", str(second_wave(tmp_path)))
        names = first + [f"{p}-second-{i}" for p in "ab" for i in range(3)]
        wait_for(
            lambda: all(status(live)["jobs"].get(j, {}).get("status") == "running" for j in names),
            timeout=60,
            what="every job running after failover",
        )
        assert len([e for e in leaders(live) if e.pool == "a" and e.epoch == 2]) == 1
        assert [e.epoch for e in leaders(live) if e.pool == "b"] == [1]

        log = run(log_of(live))
        bound = [(e.job, e.pod) for m in log for e in m.events if isinstance(e, PodBound)]
        assert len(bound) == len(set(bound)) == 2 + 1 + 2 + 1 + 6

        # Nothing decided under the dead leader's epoch is bound once its successor is elected.
        elected_at = next(
            m.seq for m in log for e in m.events if isinstance(e, LeaderElected) and e.epoch == 2
        )
        stale = {(e.job, e.pod) for m in log if m.seq > elected_at for e in m.events
                 if isinstance(e, BindRequested) and e.pool == "a" and e.epoch < 2}  # fmt: skip
        assert not stale & {
            (e.job, e.pod) for m in log if m.seq > elected_at for e in m.events if isinstance(e, PodBound)
        }
        a_binds = [
            e
            for m in log
            if m.seq > elected_at
            for e in m.events
            if isinstance(e, BindRequested) and e.pool == "a"
        ]
        assert a_binds and all(e.epoch == 2 for e in a_binds)
