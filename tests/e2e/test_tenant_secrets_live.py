"""Tenants' secrets on a live, secured system with a real agent: a team's job reads its own secret of a
name, never another team's of the same name, and one naming a secret only the other team has fails."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from muster import events as ev
from muster.runtime.settings import Settings
from muster.runtime.system import running_system

from tests.agent import conftest as agent_fixtures
from tests.agent.conftest import CLI, POD_PYTHON, Agents, cli_env, events, muster, read_json_lines
from tests.agent.test_live import registered
from tests.e2e.conftest import SERVICE_ENV
from tests.polling import wait_for

pytestmark = [pytest.mark.nats, pytest.mark.postgres, pytest.mark.slow]

PROBE = str(Path(__file__).parents[1] / "agent" / "probe.py")
pod_out = agent_fixtures.pod_out  # a folder pods may write to, whichever user they run as


@pytest.fixture(scope="module")
def system(tmp_path_factory, servers):
    """Embedded NATS with a login per service, two tenants, and one agent node."""
    home = tmp_path_factory.mktemp("tenant-secrets")
    settings = Settings(home=home / "home", pg_dsn=servers.pg_dsn, prefix=f"t{uuid.uuid4().hex[:12]}")
    services = ("podgrouper", "queue_controller", "allocator")
    with running_system(settings, services=services, service_env=SERVICE_ENV) as live:
        assert live.logins.nats, "embedded NATS runs with a user per service"
        queues = home / "queues.yaml"
        queues.write_text("queues:\n  - name: qa\n  - name: qb\n")
        muster(live, "queues", "apply", "-f", str(queues))
        for tenant, queue in (("team-a", "qa"), ("team-b", "qb")):
            muster(live, "tenant", "add", tenant, "--queue", queue)
        agents = Agents(live)
        agents.start("node-a", 1)
        try:
            registered(live, "node-a")
            yield live
        finally:
            agents.stop_all()


def set_secret(system, tenant: str, name: str, value: str) -> None:
    # A tenant just added may wait for the server to finish reloading its users.
    def done() -> bool:
        result = subprocess.run(
            [sys.executable, "-c", CLI, "secret", "set", "--tenant", tenant, name],
            input=value, env=cli_env(system), capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        return result.returncode == 0

    wait_for(done, timeout=20, what=f"{tenant}'s secret {name} set")


def run_probe(system, tenant: str, queue: str, out: Path, secret: str) -> str:
    def submitted():
        result = muster(
            system, "run", "--json", "--tenant", tenant, "--queue", queue, "--secret-env",
            f"PROBE_EXTRA={secret}", "--", POD_PYTHON, PROBE, str(out), "0", check=False,
        )  # fmt: skip
        return result.returncode == 0 and json.loads(result.stdout)["job"]

    return wait_for(submitted, timeout=20, what=f"{tenant}'s job submitted")


def test_a_tenants_job_reads_its_own_secret_of_a_name_another_tenant_also_has(system, pod_out):
    # team-b's last: were the names shared, its value would be the one found.
    set_secret(system, "team-a", "db", "value-of-team-a")
    set_secret(system, "team-b", "db", "value-of-team-b")
    job = run_probe(system, "team-a", "qa", pod_out, "db")

    (start,) = wait_for(
        lambda: [
            e for e in read_json_lines(pod_out / "events.jsonl") if e["job"] == job and e["event"] == "start"
        ],
        what="team-a's pod",
    )
    assert start["env"]["PROBE_EXTRA"] == "value-of-team-a"


def test_a_tenants_job_naming_a_secret_only_another_tenant_has_fails(system, pod_out):
    set_secret(system, "team-b", "only-b", "value-of-team-b")
    job = run_probe(system, "team-a", "qa", pod_out, "only-b")

    (failed,) = wait_for(
        lambda: [e for _, e in events(system) if isinstance(e, ev.PodFailed) and e.job == job],
        what="PodFailed",
    )
    assert "only-b" in failed.reason and "tenant team-a" in failed.reason
    assert read_json_lines(pod_out / "events.jsonl") == []


def test_a_tenant_lists_and_removes_its_own_secrets_by_name(system):
    set_secret(system, "team-a", "short-lived", "v")
    set_secret(system, "team-b", "of-team-b", "v")
    listed = json.loads(muster(system, "secret", "list", "--tenant", "team-a", "--json").stdout)["secrets"]
    assert "short-lived" in listed and "of-team-b" not in listed

    muster(system, "secret", "remove", "--tenant", "team-a", "short-lived")
    assert "short-lived" not in muster(system, "secret", "list", "--tenant", "team-a").stdout.split()
    again = muster(system, "secret", "remove", "--tenant", "team-a", "short-lived", check=False)
    assert again.returncode != 0 and "no secret short-lived" in again.stderr
    refused = muster(system, "secret", "remove", "--tenant", "team-a", "of-team-b", check=False)
    assert refused.returncode != 0  # another team's name is no secret of team-a's
    assert "of-team-b" in muster(system, "secret", "list", "--tenant", "team-b").stdout.split()
