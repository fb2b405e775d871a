"""A lease bucket lost and recreated does not elect below the log: the next leader's binds still bind."""

from __future__ import annotations

import msgspec
import pytest
from muster.bus import NatsBus
from muster.events import BindRejected, BindRequested, LeaderElected, PodBound
from muster.lease import LeaseRecord, lease_bucket
from muster.runtime.settings import Settings
from muster.runtime.system import running_system

from tests.e2e.conftest import SERVICE_ENV, log_of, muster, run, status
from tests.polling import wait_for

pytestmark = [pytest.mark.nats, pytest.mark.postgres, pytest.mark.slow]

WITHOUT_ALLOCATOR = ("projector", "queue_controller", "podgrouper", "binder")

SCENARIO = """\
name: one-job
nodes:
  - {name: n-1, resources: {gpu: 4, cpu: 32, memory: 128Gi}}
queues:
  - name: team
    resources: {gpu: {quota: 4}}
jobs:
  - {name: after-the-wipe, queue: team, pods: [{count: 2, resources: {gpu: 1}}]}
"""


async def an_old_leader_at_epoch_5_then_its_bucket_wiped(system) -> None:
    """The log remembers a leader of epoch 5; the bucket that elected it is deleted."""
    bus = await NatsBus.connect(system.endpoints.nats_url, system.endpoints.subjects, service="test")
    try:
        s = system.endpoints.subjects
        await bus.publish(
            s.decisions("default"), [LeaderElected(epoch=5, holder="old")], msg_id="test:old-leader"
        )
        kv = await lease_bucket(bus.js, s.stream)
        await kv.put("pool.default", msgspec.json.encode(LeaseRecord("old", 5, 0.0)))
        await bus.js.delete_key_value(f"{s.stream}_LEASES")
    finally:
        await bus.close()


def test_after_the_lease_bucket_is_wiped_the_next_leader_decides_above_the_logs_epoch_and_binds(
    tmp_path, servers, prefix
):
    settings = Settings(
        home=tmp_path / "home", nats_url=servers.nats_url, pg_dsn=servers.pg_dsn, prefix=prefix
    )
    with running_system(settings, services=WITHOUT_ALLOCATOR, service_env=SERVICE_ENV) as live:
        run(an_old_leader_at_epoch_5_then_its_bucket_wiped(live))
        live.start_service("allocator", env={"MUSTER_INSTANCE": "new"})
        scenario = tmp_path / "one-job.yaml"
        scenario.write_text(SCENARIO)
        muster(live, "apply", "-f", str(scenario))

        wait_for(
            lambda: status(live)["jobs"].get("after-the-wipe", {}).get("status") == "running",
            what="the job running under the new leader",
        )
        events = [e for m in run(log_of(live)) for e in m.events]
        (new,) = [e for e in events if isinstance(e, LeaderElected) and e.holder == "new"]
        assert new.epoch >= 6
        binds = [e for e in events if isinstance(e, BindRequested)]
        assert binds and all(e.epoch == new.epoch for e in binds)
        assert len([e for e in events if isinstance(e, PodBound)]) == 2
        assert not [e for e in events if isinstance(e, BindRejected)]
