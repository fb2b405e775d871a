"""Declaring tenants: names that fit a subject, queues they may use, logins only their owner reads."""

from __future__ import annotations

import json
import stat

import pytest
from muster import tenants
from muster.runtime.security import tenant_permissions
from muster.subjects import Subjects, subject_matches
from muster.tenants import TenantError, TenantLogin

S = Subjects("muster")


@pytest.mark.parametrize("name", ["Team-A", "team.a", "team_a", "-a", "a-", "", "a" * 64, "a*", "a>"])
def test_a_name_that_cannot_be_one_subject_token_is_refused_naming_the_field(tmp_path, name):
    with pytest.raises(TenantError, match="^name: "):
        tenants.add(tmp_path, name, ["q"])


@pytest.mark.parametrize("queue", ["a.b", "a*", ">", "a b", ""])
def test_a_queue_that_cannot_be_one_subject_token_is_refused_naming_the_field(tmp_path, queue):
    with pytest.raises(TenantError, match="^queue: "):
        tenants.add(tmp_path, "team-a", [queue])


def test_a_tenant_needs_a_queue(tmp_path):
    with pytest.raises(TenantError, match="^queue: "):
        tenants.add(tmp_path, "team-a", [])


def test_each_tenant_gets_its_own_password_kept_in_a_login_file_only_its_owner_reads(tmp_path):
    a, b = tenants.add(tmp_path, "team-a", ["qa"]), tenants.add(tmp_path, "team-b", ["qb"])
    assert a.password and b.password and a.password != b.password
    path = tenants.login_path(tmp_path, "team-a")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    login = json.loads(path.read_text())
    assert (login["user"], login["password"], login["inbox_prefix"]) == (
        "tenant-team-a", a.password, "_INBOX.tenant-team-a",
    )  # fmt: skip
    assert a.password not in (tmp_path / "tenants.json").read_text()


def test_declaring_a_tenant_again_replaces_its_queues_and_keeps_its_password(tmp_path):
    first = tenants.add(tmp_path, "team-a", ["qa"])
    again = tenants.add(tmp_path, "team-a", ["qa", "qb"])
    assert again.password == first.password
    assert [(t.name, t.queues) for t in tenants.load(tmp_path)] == [("team-a", ("qa", "qb"))]


def test_a_removed_tenant_is_gone_with_its_login(tmp_path):
    tenants.add(tmp_path, "team-a", ["qa"])
    tenants.remove(tmp_path, "team-a")
    assert tenants.load(tmp_path) == []
    assert not tenants.login_path(tmp_path, "team-a").exists()
    with pytest.raises(TenantError, match="^name: "):
        tenants.remove(tmp_path, "team-a")


def test_a_client_submits_to_the_queue_it_names_or_the_tenants_only_one(tmp_path):
    tenants.add(tmp_path, "team-a", ["qa"])
    login = TenantLogin.read(tmp_path, "team-a")
    assert login.queue_for(None) == "qa"
    with pytest.raises(TenantError, match="^queue: 'qb' is not one of tenant team-a's"):
        login.queue_for("qb")


def test_a_tenant_with_several_queues_must_name_one(tmp_path):
    tenants.add(tmp_path, "team-a", ["qa", "qb"])
    with pytest.raises(TenantError, match="^queue: "):
        TenantLogin.read(tmp_path, "team-a").queue_for(None)


def test_a_tenant_without_a_login_is_refused_clearly(tmp_path):
    with pytest.raises(TenantError, match="muster tenant add"):
        TenantLogin.read(tmp_path, "team-a")


# -- permissions ---------------------------------------------------------------------------------


def may_publish(tenant: str, queues: list[str], subject: str) -> bool:
    return any(subject_matches(p, subject) for p in tenant_permissions("muster", tenant, queues).publish)


def test_a_tenant_may_publish_only_on_its_own_queues_subjects_in_the_stream():
    allowed = [
        p for p in tenant_permissions("muster", "team-a", ["qa", "qb"]).publish if p.startswith("muster.")
    ]
    assert allowed == [S.tenant_workloads("team-a", "qa"), S.tenant_workloads("team-a", "qb")]


@pytest.mark.parametrize(
    "subject",
    [S.tenant_workloads("team-b", "qa"), S.tenant_workloads("team-a", "qc"), S.workloads, S.podgroups,
     "$JS.API.CONSUMER.DURABLE.CREATE.MUSTER.podgrouper", f"$JS.API.CONSUMER.CREATE.{S.stream}.podgrouper",
     f"$JS.ACK.{S.stream}.podgrouper.1.1.1.1.1"],
)  # fmt: skip
def test_a_tenant_may_not_publish_elsewhere_nor_touch_durable_consumers(subject):
    assert not may_publish("team-a", ["qa", "qb"], subject)


def test_a_tenant_subject_names_its_tenant_and_queue():
    assert S.tenant_and_queue("muster.workloads.team-a.qa") == ("team-a", "qa")
    assert S.tenant_and_queue(S.workloads) is None
    assert S.tenant_and_queue("muster.podgroups") is None


def test_a_tenants_subject_carries_submissions_and_cancels_only():
    assert S.allowed_types(S.tenant_workloads("team-a", "qa")) == {"WorkloadSubmitted", "CancelRequested"}
    assert "CancelRequested" not in S.allowed_types(S.workloads)
