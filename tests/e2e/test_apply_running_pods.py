"""`muster apply` of a scenario with pods already running, on a system of service processes."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest
import yaml
from muster.runtime.settings import Settings
from muster.runtime.system import SERVICES, running_system
from muster.scenario import allocator_config, load_scenario

from tests.e2e.conftest import SERVICE_ENV, muster, status
from tests.polling import wait_for

pytestmark = [pytest.mark.nats, pytest.mark.postgres, pytest.mark.slow]

SCENARIO = Path(__file__).resolve().parents[1] / "scenarios" / "running-pods-count-as-allocated.yaml"


def test_pods_already_running_are_reported_where_the_file_puts_them_and_replay_agrees(
    tmp_path, servers, prefix
):
    config = tmp_path / "allocator.yaml"
    config.write_text(yaml.safe_dump(msgspec.to_builtins(allocator_config(load_scenario(SCENARIO)))))
    settings = Settings(
        home=tmp_path / "home", nats_url=servers.nats_url, pg_dsn=servers.pg_dsn, prefix=prefix
    )
    env = {**SERVICE_ENV, "MUSTER_ALLOCATOR_CONFIG": str(config)}
    with running_system(settings, services=SERVICES, service_env=env) as live:
        applied = json.loads(muster(live, "apply", "-f", str(SCENARIO), "--json").stdout)
        assert (applied["jobs"], applied["running"]) == (3, 2)

        def decided():
            state = status(live)
            return state if state["jobs"].get("too-big", {}).get("reason") else None

        state = wait_for(decided, what="the allocator to have decided on every job")
        resident = state["jobs"]["resident"]
        assert resident["status"] == "running"
        assert sorted((p["node"], p["gpus"]) for p in resident["pods"]) == [
            ("node-a", [0, 1, 2]),
            ("node-a", [3, 4, 5]),
        ]
        assert state["jobs"]["fits"]["status"] == "running"
        assert state["jobs"]["too-big"]["status"] == "pending"
        assert state["queues"]["team-a"]["allocated"]["gpu"] == 6.0
        assert state["nodes"]["node-a"]["free"]["gpu"] == 0.0
        replayed = json.loads(muster(live, "replay", "--json").stdout)
    assert replayed["cycles"] >= 1 and replayed["divergences"] == 0
