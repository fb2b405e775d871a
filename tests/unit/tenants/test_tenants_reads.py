"""What a tenant's login may read: consumers filtered to its own subjects, never a service's consumer."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from muster.runtime.security import DURABLE_CONSUMERS, render_permissions, tenant_permissions
from muster.subjects import Subjects, subject_matches

S = Subjects("muster")
CREATE = f"$JS.API.CONSUMER.CREATE.{S.stream}"
SERVICES = Path(__file__).resolve().parents[3] / "services"


def may_publish(subject: str) -> bool:
    permissions = tenant_permissions("muster", "team-a", ["qa", "qb"])
    denied = any(subject_matches(p, subject) for p in permissions.publish_deny)
    return not denied and any(subject_matches(p, subject) for p in permissions.publish)


@pytest.mark.parametrize(
    "filtered", [S.answers("team-a"), S.tenant_workloads("team-a", "qa"), S.tenant_workloads("team-a", "qb")]
)
def test_a_tenant_may_create_a_consumer_filtered_to_one_of_its_own_subjects(filtered):
    assert may_publish(f"{CREATE}.read-1.{filtered}")


@pytest.mark.parametrize(
    "filtered",
    [S.answers("team-b"), S.answers(), S.podgroups, S.tenant_workloads("team-b", "qa"),
     S.tenant_workloads("team-a", "*"), S.tenant_workloads(), S.workloads, S.all, ">"],
)  # fmt: skip
def test_a_tenant_may_not_create_a_consumer_filtered_to_anything_else(filtered):
    assert not may_publish(f"{CREATE}.read-1.{filtered}")


@pytest.mark.parametrize(
    "subject",
    [CREATE, f"{CREATE}.read-1", f"$JS.API.STREAM.INFO.{S.stream}", f"$JS.API.STREAM.MSG.GET.{S.stream}",
     f"$JS.API.DIRECT.GET.{S.stream}", f"$JS.API.CONSUMER.INFO.{S.stream}.podgrouper", "$JS.API.STREAM.NAMES"],
)  # fmt: skip
def test_a_tenant_may_not_create_an_unfiltered_consumer_nor_ask_about_the_stream(subject):
    assert not may_publish(subject)


@pytest.mark.parametrize("name", DURABLE_CONSUMERS)
def test_a_tenant_may_not_name_a_services_durable_consumer_even_filtered_to_its_own_subject(name):
    assert not may_publish(f"{CREATE}.{name}.{S.answers('team-a')}")


def test_the_deny_list_is_written_into_the_servers_config():
    rendered = render_permissions(tenant_permissions("muster", "team-a", ["qa"]))
    assert f'deny: [\n    "{CREATE}.podgrouper.>"' in rendered


def durable_names_in_services() -> set[str]:
    """The first argument of every ``.consume("NAME", ...)`` call in the services' code."""
    names = set()
    for path in SERVICES.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "consume" and node.args:
                first = node.args[0]
                assert isinstance(first, ast.Constant), f"{path}: a durable consumer named at run time"
                names.add(first.value)
    return names


def test_every_durable_consumer_of_the_services_is_denied_to_tenants():
    assert durable_names_in_services() <= set(DURABLE_CONSUMERS)


def test_a_tenants_answers_subject_carries_its_answers_only():
    assert S.allowed_types(S.answers("team-a")) == {"RequestAnswered"}
    assert "RequestAnswered" not in S.allowed_types(S.podgroups)
