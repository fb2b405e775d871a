"""Issue #25's first attack on a live, secured system, through the real CLI.

A tenant publishes first under the message id another tenant's `muster
submit` would use; JetStream then drops the victim's message as a duplicate.
The victim's submission must either be stored (its id could not be known in
advance) or fail loudly: never print "submitted" for a job that will not exist.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from muster.bus import NatsBus
from muster.events import PodGroupCreated, WorkloadSubmitted
from muster.runtime.security import NatsCredentials
from muster.sdk import workload_uid
from muster.tenants import TenantLogin

from tests.e2e import test_tenants_live
from tests.e2e.conftest import muster, run
from tests.e2e.test_tenants_live import answer, pod_file, submit_as

pytestmark = [pytest.mark.nats, pytest.mark.postgres, pytest.mark.slow]

system = test_tenants_live.system
"""The podgrouper on an embedded NATS that refuses strangers, with tenants team-a and team-b."""


async def squat(system, msg_ids: list[str]) -> None:
    """team-b publishes first, on its own queue's subject, under each of ``msg_ids``."""
    login = TenantLogin.read(system.settings.home, "team-b")
    bus = await NatsBus.connect(
        system.endpoints.nats_url,
        system.endpoints.subjects,
        service="attacker",
        credentials=NatsCredentials(login.user, login.password, login.nats_ca),
        ensure_stream=False,
    )
    try:
        subject = system.endpoints.subjects.tenant_workloads("team-b", "qb")
        for msg_id in msg_ids:
            await bus.publish(subject, [WorkloadSubmitted(uid="squat", manifests=[])], msg_id=msg_id)
    finally:
        await bus.close()


def test_a_submission_is_stored_though_another_tenant_published_first_under_its_predictable_ids(
    system, tmp_path
):
    path = pod_file(tmp_path, "victim-job")
    uid = workload_uid([yaml.safe_load(Path(path).read_text())])
    # Every id team-b can derive from the manifest and team-a's name alone.
    run(squat(system, [f"submit:{uid}", f"submit:team-a:{uid}", f"tenant/team-a/submit:{uid}"]))
    submit_as(system, "team-a", path)
    group = answer(system, PodGroupCreated, name="victim-job")
    assert group.owner == "team-a"


def test_a_submission_the_stream_drops_as_a_duplicate_is_reported_and_exits_1(system, tmp_path):
    path = pod_file(tmp_path, "twice")
    submit_as(system, "team-a", path)
    again = muster(system, "submit", "--tenant", "team-a", "-f", path, check=False)
    assert again.returncode == 1
    assert "was not submitted" in again.stderr and "already names message" in again.stderr
    assert "submitted" not in again.stdout
