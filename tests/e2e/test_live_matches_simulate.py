"""Every scenario file, applied to a live system, ends where ``muster simulate`` ends.

``muster simulate --json`` runs all the files once; then each file goes to a
live system of its own (every service, real NATS and Postgres: see
``tests/e2e/in_process.py``) with ``muster apply``'s code, and the test
waits until ``muster status``'s document shows the simulated outcome and the
log stays quiet: job statuses, each job's placement as a multiset of nodes
(with device indices where the file pins them, for pods it says already
run), pending reasons, and every queue's fair share and allocation. The
live log then replays with no divergence.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from muster.cli.apply_cmd import apply
from muster.replay import log_from_nats, replay
from muster.scenario import allocator_config, load_scenario
from muster.scenario.model import Scenario
from muster.store.queries import status

from tests.e2e.in_process import LiveSystem, live_system

pytestmark = [pytest.mark.nats, pytest.mark.postgres, pytest.mark.slow]

SCENARIOS = Path(__file__).resolve().parents[1] / "scenarios"
FILES = sorted(SCENARIOS.glob("*.yaml"))

# Live time is wall time. A scenario whose outcome waits for time to pass (a duration, a min_runtime,
# a stale gang's grace) runs here when the wait is a few seconds; one that stops at max_cycles before
# something time-bound happens (a grace of 60 s, a min_runtime of 10000 s) matches live during that
# time, which is when it is compared. These two wait too long to run here:
NEEDS_SIMULATED_TIME = {
    "preempt-queue-min-runtime-inherited-from-parent": "its outcome comes after a min_runtime of 30 s",
    "reclaim-queue-min-runtime-expires": "its outcome comes after a min_runtime of 300 s",
}

SETTLE_SECONDS = 20.0
"""How long a live system may take to reach the simulated outcome (most take well under one)."""
QUIET_SECONDS = 0.2
"""How long the log must stay unchanged once the outcome is reached: many allocator cycles."""


@pytest.fixture(scope="module")
def simulated() -> dict[str, dict]:
    """What ``muster simulate --json`` prints for every scenario file, by scenario name."""
    out = subprocess.run(
        [sys.executable, "-m", "muster.cli.main", "simulate", "--json", *map(str, FILES)],
        capture_output=True, text=True, check=True, timeout=300,
    )  # fmt: skip
    return {result["scenario"]: result for result in json.loads(out.stdout)}


def outcome(document: dict, scenario: Scenario) -> dict:
    """What must agree, from a ``simulate --json`` or ``status --json`` document."""
    jobs = {}
    for job in scenario.jobs:
        seen = document["jobs"].get(job.name)
        if seen is None:
            jobs[job.name] = None
            continue
        # Device indices are the allocator's to choose except where the file says where pods run.
        pods = sorted((p["node"], tuple(p["gpus"]) if job.running else ()) for p in seen["pods"])
        jobs[job.name] = (seen["status"], pods, seen["reason"])
    queues = {}
    for queue in scenario.queues:
        figures = document["queues"].get(queue.name, {})
        queues[queue.name] = {
            key: {r: round(v, 6) for r, v in sorted(figures.get(key, {}).items())}
            for key in ("fair_share", "allocated")
        }
    return {"jobs": jobs, "queues": queues}


async def settled(live: LiveSystem, scenario: Scenario, want: dict) -> None:
    """Wait until the live outcome is ``want`` and the log stays quiet; fail showing both if not."""
    deadline = time.monotonic() + SETTLE_SECONDS
    got = None
    while time.monotonic() < deadline:
        live.check()
        seq = await live.bus.last_seq()
        if await live.projected():
            got = outcome(await status(live.db), scenario)
            if got == want:
                await asyncio.sleep(QUIET_SECONDS)
                if await live.bus.last_seq() == seq:
                    return
                continue
        await asyncio.sleep(0.05)
    assert got == want, f"{scenario.name}: live never reached the simulated outcome"


def cases() -> list:
    out = []
    for path in FILES:
        reason = NEEDS_SIMULATED_TIME.get(path.stem)
        marks = [pytest.mark.skip(reason=reason)] if reason else []
        out.append(pytest.param(path, id=path.stem, marks=marks))
    return out


@pytest.mark.parametrize("path", cases())
async def test_live_reaches_the_simulated_outcome_and_replays_it(path, simulated, servers, tmp_path):
    scenario = load_scenario(path)
    want = outcome(simulated[scenario.name], scenario)
    async with live_system(servers, tmp_path, allocator_config(scenario)) as live:
        applied = await apply(scenario, live.endpoints)
        assert applied["running"] == sum(len(job.running) for job in scenario.jobs)
        await settled(live, scenario, want)
        report = replay(await log_from_nats(live.bus), live.endpoints.subjects)
    assert report.divergences == 0, report.first_divergence and report.first_divergence.to_builtins()
