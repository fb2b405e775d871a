"""Every scenario file, applied to a live system, ends where ``muster simulate`` ends.

``muster simulate --json`` runs all the files once; then each file goes to a
live system of its own (every service, real NATS and Postgres: see
``tests/e2e/in_process.py``) with ``muster apply``'s code, and the test
waits until ``muster status``'s document shows the simulated outcome and the
log stays quiet: job statuses, each job's placement as a multiset of nodes
(with device indices where the file pins them, for pods it says already
run), pending reasons, and every queue's fair share and allocation. The
live log then replays with no divergence.

The live systems run ``CONCURRENT`` at a time in one event loop (each has
its own stream, schema and settings), once for the module; each file's test
then reads its own system's result.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from muster.cli.apply_cmd import apply
from muster.cli.apply_cmd import simulated_only as refuse_unsimulated
from muster.replay import log_from_nats, replay
from muster.scenario import ScenarioError, allocator_config, load_scenario
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

SETTLE_SECONDS = 60.0
"""How long a live system may take to reach the simulated outcome (most take well under one, alone)."""
QUIET_SECONDS = 0.2
"""How long the log must stay unchanged once the outcome is reached: many allocator cycles."""
CONCURRENT = 4
"""Live systems at a time: most of a system's time is waiting for cycles and the projection."""


@dataclass
class LiveRun:
    """What one scenario's live system reached, and what its log replays to."""

    want: dict
    got: dict | None = None
    reached: bool = False
    divergences: int = 0
    first_divergence: dict | None = None
    error: str | None = None


@pytest.fixture(scope="module")
def simulated() -> dict[str, dict]:
    """What ``muster simulate --json`` prints for every scenario file, by scenario name."""
    out = subprocess.run(
        [sys.executable, "-m", "muster.cli.main", "simulate", "--json", *map(str, FILES)],
        capture_output=True, text=True, check=True, timeout=300,
    )  # fmt: skip
    return {result["scenario"]: result for result in json.loads(out.stdout)}


@pytest.fixture(scope="module")
def live_runs(request, simulated, servers, tmp_path_factory) -> dict[str, LiveRun]:
    """Every scenario file this session tests (and can run live), each on a live system of its own,
    by file name."""
    chosen = {
        item.callspec.params["path"]
        for item in request.session.items
        if item.originalname == "test_live_reaches_the_simulated_outcome_and_replays_it"
    }
    paths = [path for path in FILES if path in chosen and skip_reason(path) is None]
    return asyncio.run(_run_all(paths, simulated, servers, tmp_path_factory))


async def _run_all(paths, simulated, servers, tmp_path_factory) -> dict[str, LiveRun]:
    turns = asyncio.Semaphore(CONCURRENT)

    async def one(path: Path) -> tuple[str, LiveRun]:
        async with turns:
            return path.stem, await _run_live(path, simulated, servers, tmp_path_factory.mktemp(path.stem))

    return dict(await asyncio.gather(*(one(path) for path in paths)))


async def _run_live(path: Path, simulated, servers, home: Path) -> LiveRun:
    scenario = load_scenario(path)
    run = LiveRun(want=outcome(simulated[scenario.name], scenario))
    try:
        async with live_system(servers, home, allocator_config(scenario)) as live:
            applied = await apply(scenario, live.endpoints)
            assert applied["running"] == sum(len(job.running) for job in scenario.jobs)
            run.got, run.reached = await settled(live, scenario, run.want)
            if run.reached:
                report = replay(await log_from_nats(live.bus), live.endpoints.subjects)
                run.divergences = report.divergences
                if report.first_divergence is not None:
                    run.first_divergence = report.first_divergence.to_builtins()
    except Exception as exc:  # one system failing must not take the others' results with it
        run.error = f"{type(exc).__name__}: {exc}"
    return run


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


async def settled(live: LiveSystem, scenario: Scenario, want: dict) -> tuple[dict | None, bool]:
    """Wait until the live outcome is ``want`` and the log stays quiet: the last outcome seen, and
    whether it was reached."""
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
                    return got, True
                continue
        await asyncio.sleep(0.05)
    return got, False


def simulated_only(path: Path) -> str | None:
    """Why ``muster apply`` refuses the file, if it does: a node or job a live simulated fleet would only
    pretend to run (a machine that runs commands, a command job). Such a file pins the simulator alone."""
    try:
        refuse_unsimulated(load_scenario(path))
    except ScenarioError as exc:
        return f"muster apply refuses it ({exc})"
    return None


def clock_anchored(path: Path) -> str | None:
    """Why a file's outcome depends on where its clock starts, if it does: a tumbling or cron usage window
    resets at fixed moments of the clock, which live is wall time, not the file's t=0."""
    fairness = load_scenario(path).config.fairness
    if fairness is not None and fairness.window_type != "sliding":
        return f"its {fairness.window_type} usage window resets at fixed moments of the clock; live time is wall time"
    return None


def skip_reason(path: Path) -> str | None:
    return NEEDS_SIMULATED_TIME.get(path.stem) or simulated_only(path) or clock_anchored(path)


def cases() -> list:
    out = []
    for path in FILES:
        reason = skip_reason(path)
        marks = [pytest.mark.skip(reason=reason)] if reason else []
        out.append(pytest.param(path, id=path.stem, marks=marks))
    return out


@pytest.mark.timeout(1200)  # the first test waits for every live system (about a minute)
@pytest.mark.parametrize("path", cases())
def test_live_reaches_the_simulated_outcome_and_replays_it(path, live_runs):
    run = live_runs[path.stem]
    assert run.error is None, f"{path.stem}: {run.error}"
    assert run.reached and run.got == run.want, f"{path.stem}: live never reached the simulated outcome"
    assert run.divergences == 0, run.first_divergence
