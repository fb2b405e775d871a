"""Who may touch the secret store, as the permission tables say (the server enforces them:
tests/security/test_tenant_secrets.py)."""

from __future__ import annotations

from muster.runtime.security import agent_permissions, nats_permissions, tenant_permissions
from muster.secret_names import bucket

STORE = f"KV_{bucket('MUSTER')}"
VALUES = f"$KV.{bucket('MUSTER')}"


def touching_the_store(publish: tuple[str, ...]) -> set[str]:
    return {p for p in publish if STORE in p or p.startswith(VALUES)}


def test_only_agents_may_read_a_value():
    readers = {
        user
        for user, perms in nats_permissions().items()
        if any(p.startswith(f"$JS.API.DIRECT.GET.{STORE}") for p in perms.publish)
    }
    assert readers == {"agent"}
    assert any(
        p.startswith(f"$JS.API.DIRECT.GET.{STORE}") for p in agent_permissions("muster", "gpu-1").publish
    )


def test_a_tenant_writes_and_lists_its_own_space_and_nothing_else_of_the_store():
    assert touching_the_store(tenant_permissions("muster", "team-a", ["qa"]).publish) == {
        f"{VALUES}.team-a.>",
        f"$JS.API.CONSUMER.CREATE.{STORE}.*.{VALUES}.team-a.>",
    }


def test_the_cli_writes_the_systems_space_only_and_makes_the_store():
    cli = touching_the_store(nats_permissions()["cli"].publish)
    assert {p for p in cli if p.startswith(VALUES)} == {f"{VALUES}._system.>"}
    assert f"$JS.API.STREAM.CREATE.{STORE}" in cli


def test_no_service_touches_the_store():
    services = (
        "projector",
        "queue-controller",
        "podgrouper",
        "allocator",
        "binder",
        "nodewatch",
        "dashboard",
    )
    perms = nats_permissions()
    assert all(not touching_the_store(perms[s].publish) for s in services)
