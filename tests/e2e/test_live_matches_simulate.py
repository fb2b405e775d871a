"""The live allocator makes the decisions the simulator makes on the same scenario."""

from __future__ import annotations

import json
import subprocess
import sys
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

SCENARIOS = Path(__file__).resolve().parents[1] / "scenarios"
CASES = [
    "gang-all-or-nothing",
    "fractional-gpus-share-one-device",
    "fair-share-over-quota-by-weight",
    "limit-at-parent-queue",
    "non-preemptible-only-within-quota",
]


def simulated(path: Path) -> dict:
    out = subprocess.run(
        [sys.executable, "-m", "muster.cli.main", "simulate", "--json", str(path)],
        capture_output=True, text=True, check=True, timeout=120,
    )  # fmt: skip
    return json.loads(out.stdout)


def comparable(jobs: dict) -> dict:
    return {
        name: (job["status"], sorted((p["node"], tuple(p["gpus"])) for p in job["pods"]), job["reason"])
        for name, job in jobs.items()
    }


@pytest.mark.parametrize("case", CASES)
def test_live_status_equals_simulate_output(case, tmp_path, servers, prefix):
    path = SCENARIOS / f"{case}.yaml"
    scenario = load_scenario(path)
    config = tmp_path / "allocator.yaml"
    config.write_text(yaml.safe_dump(msgspec.to_builtins(allocator_config(scenario))))
    want = simulated(path)
    settings = Settings(
        home=tmp_path / "home", nats_url=servers.nats_url, pg_dsn=servers.pg_dsn, prefix=prefix
    )
    env = {**SERVICE_ENV, "MUSTER_ALLOCATOR_CONFIG": str(config)}
    with running_system(settings, services=SERVICES, service_env=env) as live:
        muster(live, "apply", "-f", str(path))

        def settled():
            state = status(live)
            jobs = {name: state["jobs"].get(name) for name in want["jobs"]}
            if any(j is None for j in jobs.values()):
                return None
            return state if comparable(jobs) == comparable(want["jobs"]) else None

        try:
            state = wait_for(settled, timeout=20, what=f"live status to match simulate on {case}")
        except AssertionError:
            state = status(live)
            assert comparable({n: state["jobs"].get(n) for n in want["jobs"]}) == comparable(want["jobs"])
            raise
    for queue, figures in want["queues"].items():
        for key in ("fair_share", "allocated"):
            assert state["queues"][queue][key] == pytest.approx(figures[key]), (queue, key)
