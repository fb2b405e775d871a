"""A real process that exits with code 3: `muster why`, `muster status` and the dashboard say so."""

from __future__ import annotations

import json

import httpx
import pytest

from tests.agent.conftest import muster, queues
from tests.agent.test_live import registered
from tests.polling import wait_for

pytestmark = [pytest.mark.nats, pytest.mark.postgres, pytest.mark.slow]

# A shell anyone may run: an agent running as root runs pods as an unprivileged user.
EXITS_3 = ["/bin/sh", "-c", "echo giving up >&2; exit 3"]
REASON = "exited with code 3: giving up"


def status(system) -> dict:
    return json.loads(muster(system, "status", "--json").stdout)


def test_a_pod_that_exits_with_code_3_fails_its_job_visibly_everywhere(system, agents):
    queues(system, "team")
    agents.start("node-a", 1)
    registered(system, "node-a")
    run = muster(system, "run", "--json", "--queue", "team", "--gpus", "1", "--", *EXITS_3)
    job = json.loads(run.stdout)["job"]

    state = wait_for(
        lambda: (s := status(system))["jobs"].get(job, {}).get("status") == "failed" and s,
        what="the job failed",
    )
    shown = state["jobs"][job]
    assert shown["failures"] == [{"pod": 0, "node": "node-a", "exit_code": 3, "reason": REASON}]
    assert shown["reason"] == f"pod 0 failed on node-a with exit code 3: {REASON}"

    story = json.loads(muster(system, "why", job, "--json").stdout)
    assert (story["status"], story["reason"], story["failures"]) == (
        "failed",
        shown["reason"],
        shown["failures"],
    )
    [failure] = [e for e in story["timeline"] if e["kind"] == "failed"]
    assert (failure["exit_code"], failure["reason"], failure["pods"][0]["node"]) == (3, REASON, "node-a")

    text = muster(system, "why", job).stdout
    assert f"{job} in queue team: failed" in text and "failed because: pod 0 failed on node-a" in text

    url = json.loads((system.settings.home / "dashboard.json").read_text())["url"]
    listed = httpx.get(f"{url}api/jobs", params={"status": "failed"}, timeout=10).json()["jobs"]
    assert [(j["name"], j["reason"]) for j in listed] == [(job, shown["reason"])]
