"""Tenants on a live, secured system: the attacks of issue #15 fail, and each team's own work goes on.

Two teams declared with `muster tenant add` while the system runs (its NATS
reloads their users): team-b's job cannot be squatted nor cancelled by team-a,
a submission cannot reach a queue its subject does not name, and each team
cancels its own jobs.
"""

from __future__ import annotations

import signal
import uuid
from pathlib import Path

import pytest
import yaml
from muster.bus import NatsBus
from muster.bus.nats import NatsLoginRefused
from muster.events import CancelRefused, PodGroupCreated, PodGroupDeleted, RequestAnswered, WorkloadRejected
from muster.runtime.security import NatsCredentials
from muster.runtime.settings import Settings
from muster.runtime.system import running_system
from muster.sdk import Client
from muster.tenants import TenantLogin
from nats.errors import TimeoutError as NatsTimeoutError

from tests.e2e.conftest import SERVICE_ENV, events_on, muster, run
from tests.polling import wait_for

pytestmark = [pytest.mark.nats, pytest.mark.postgres, pytest.mark.slow]


@pytest.fixture(scope="module")
def system(tmp_path_factory, servers):
    """The podgrouper against an embedded NATS that refuses strangers, two tenants added while it runs."""
    home = tmp_path_factory.mktemp("tenants")
    settings = Settings(home=home / "home", pg_dsn=servers.pg_dsn, prefix=f"t{uuid.uuid4().hex[:12]}")
    with running_system(settings, services=("podgrouper",), service_env=SERVICE_ENV) as live:
        assert live.logins.nats, "embedded NATS runs with a user per service"
        for tenant, queue in (("team-a", "qa"), ("team-b", "qb")):
            muster(live, "tenant", "add", tenant, "--queue", queue)
        yield live


def pod_file(tmp_path, name: str, queue: str | None = None) -> str:
    labels = {"kai.scheduler/queue": queue} if queue else {}
    doc = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": labels},
        "spec": {"containers": [{"name": "c"}]},
    }
    path = tmp_path / f"{name}-{queue}.yaml"
    path.write_text(yaml.safe_dump(doc))
    return str(path)


async def podgroups(system) -> list:
    return await events_on(system, system.endpoints.subjects.podgroups)


def answer(system, kind: type, **fields):
    """Wait for the podgrouper's answer of ``kind`` whose fields are ``fields``."""

    def found():
        return next(
            (e for e in run(podgroups(system)) if isinstance(e, kind)
             and all(getattr(e, k) == v for k, v in fields.items())),
            None,
        )  # fmt: skip

    return wait_for(found, timeout=30, what=f"{kind.__name__} {fields}")


def submit_as(system, tenant: str, path: str):
    # A tenant just added may wait for the server to finish reloading its users.
    return wait_for(
        lambda: (
            (r := muster(system, "submit", "--tenant", tenant, "-f", path, check=False)).returncode == 0 and r
        ),
        timeout=20,
        what=f"{tenant} submitting {path}",
    )


def test_a_tenant_added_while_the_system_runs_submits_to_its_queue_and_owns_the_job(system, tmp_path):
    submit_as(system, "team-a", pod_file(tmp_path, "notebook-a"))
    group = answer(system, PodGroupCreated, name="notebook-a")
    assert (group.queue, group.owner) == ("qa", "team-a")


def refused_at_the_door(system, tenant: str, *args: str):
    """``muster submit --tenant`` refused with exit 2 (once the tenant, just added, can log in)."""
    return wait_for(
        lambda: (r := muster(system, "submit", "--tenant", tenant, *args, check=False)).returncode == 2 and r,
        timeout=20,
        what=f"{tenant} refused submitting {args}",
    )


async def tenant_client(system, tenant: str) -> Client:
    """A client logged in as ``tenant``, as ``Client.connect(tenant=...)`` makes it."""
    login = TenantLogin.read(system.settings.home, tenant)
    bus = await NatsBus.connect(
        system.endpoints.nats_url, system.endpoints.subjects, service="test",
        credentials=NatsCredentials(login.user, login.password, login.nats_ca), ensure_stream=False,
    )  # fmt: skip
    return Client(bus, system.endpoints, login, id_key=login.password)


async def submit_past_the_door(system, tenant: str, path: str) -> None:
    """Publish as ``tenant`` without the CLI's checks, as any client of the bus may."""
    async with await tenant_client(system, tenant) as client:
        await client.submit([yaml.safe_load(Path(path).read_text())])


async def submit_and_hear(system, tenant: str, path: str) -> tuple[RequestAnswered, bool]:
    """``tenant`` submits through the SDK and waits for its answer; and whether it could read
    ``podgroups`` too."""
    async with await tenant_client(system, tenant) as client:
        uid = await client.submit([yaml.safe_load(Path(path).read_text())])
        answered = await client.answer(uid, wait=30)
        try:
            [d async for d in client.bus.read([system.endpoints.subjects.podgroups])]
        except NatsTimeoutError:
            return answered, False
        return answered, True


def test_a_tenant_hears_its_answer_on_its_own_subject_and_cannot_read_the_others(system, tmp_path):
    # A tenant just added may wait for the server to finish reloading its users.
    submit_as(system, "team-a", pod_file(tmp_path, "warm-a"))
    answered, read_podgroups = run(submit_and_hear(system, "team-a", pod_file(tmp_path, "heard-a")))
    assert (answered.jobs, answered.error) == (["heard-a"], "")
    assert not read_podgroups
    refused, _ = run(submit_and_hear(system, "team-a", pod_file(tmp_path, "stray-a", queue="qb")))
    assert (refused.jobs, refused.field) == ([], "queue")


def test_a_tenants_mistyped_queue_is_refused_at_the_door_with_its_own_queue_meant(system, tmp_path):
    refused = refused_at_the_door(system, "team-a", "--queue", "q-a", "-f", pod_file(tmp_path, "typo-a"))
    assert 'queue "q-a" is not one of tenant team-a\'s queues; did you mean "qa"?' in refused.stderr
    assert not [e for e in run(podgroups(system)) if getattr(e, "name", None) == "typo-a"]


def test_a_submission_naming_another_queue_than_its_subjects_is_rejected(system, tmp_path):
    path = pod_file(tmp_path, "sneaky", queue="qb")
    # The CLI refuses it at the door; a client that skips the CLI meets the podgrouper's own check.
    assert "not one of tenant team-a's queues" in refused_at_the_door(system, "team-a", "-f", path).stderr
    run(submit_past_the_door(system, "team-a", path))
    rejected = answer(system, WorkloadRejected, field="queue")
    assert "'qb'" in rejected.error
    assert not [e for e in run(podgroups(system)) if isinstance(e, PodGroupCreated) and e.name == "sneaky"]


def test_squatting_another_tenants_job_name_is_rejected_and_their_job_is_untouched(system, tmp_path):
    submit_as(system, "team-b", pod_file(tmp_path, "train-b"))
    answer(system, PodGroupCreated, name="train-b", owner="team-b")
    path = pod_file(tmp_path, "train-b", queue="qa")
    # The tenant hears the rejection on its own subject: `muster submit` exits 1 with it.
    heard = wait_for(
        lambda: (r := muster(system, "submit", "--tenant", "team-a", "-f", path, check=False)).returncode == 1 and r,
        timeout=20,
        what="team-a's squatting submission refused",
    )  # fmt: skip
    assert "was rejected: metadata.name: job name train-b is taken" in heard.stderr
    rejected = answer(system, WorkloadRejected, field="metadata.name")
    assert "train-b" in rejected.error
    created = [e for e in run(podgroups(system)) if getattr(e, "name", None) == "train-b"]
    assert [(type(e), e.owner) for e in created] == [(PodGroupCreated, "team-b")]


def test_a_tenant_cannot_cancel_another_tenants_job_and_can_cancel_its_own(system, tmp_path):
    submit_as(system, "team-b", pod_file(tmp_path, "serve-b"))
    answer(system, PodGroupCreated, name="serve-b", owner="team-b")
    refused = muster(system, "cancel", "serve-b", "--tenant", "team-a", check=False)
    assert refused.returncode == 1
    assert "tenant team-a has no job serve-b" in refused.stderr
    answer(system, CancelRefused, job="serve-b")
    assert not [e for e in run(podgroups(system)) if isinstance(e, PodGroupDeleted) and e.name == "serve-b"]

    muster(system, "cancel", "serve-b", "--tenant", "team-b")
    answer(system, PodGroupDeleted, name="serve-b")


def test_who_owns_a_job_survives_a_killed_podgrouper(system, tmp_path):
    submit_as(system, "team-b", pod_file(tmp_path, "eval-b"))
    answer(system, PodGroupCreated, name="eval-b", owner="team-b")
    # Crash-only: killed without a chance to save anything, it rebuilds the owners from the log.
    system.stop_service("podgrouper", sig=signal.SIGKILL)
    system.start_service("podgrouper")
    refused = muster(system, "cancel", "eval-b", "--tenant", "team-a", check=False)
    assert refused.returncode == 1 and "tenant team-a has no job eval-b" in refused.stderr
    muster(system, "cancel", "eval-b", "--tenant", "team-b")
    answer(system, PodGroupDeleted, name="eval-b")


def test_a_removed_tenant_can_no_longer_log_in(system, tmp_path):
    muster(system, "tenant", "add", "team-c", "--queue", "qc")
    submit_as(system, "team-c", pod_file(tmp_path, "short-lived"))
    login = TenantLogin.read(system.settings.home, "team-c")
    muster(system, "tenant", "remove", "team-c")

    # The login file is gone with the tenant; its password, kept by someone, no longer works.
    async def log_in() -> bool:
        try:
            bus = await NatsBus.connect(
                system.endpoints.nats_url, system.endpoints.subjects, service="test",
                credentials=NatsCredentials(login.user, login.password), ensure_stream=False,
            )  # fmt: skip
        except NatsLoginRefused:
            return False
        await bus.close()
        return True

    wait_for(lambda: not run(log_in()), timeout=20, what="team-c's login refused")
