"""`muster why JOB` explains, in words, why a job waits."""

from __future__ import annotations

import json

import pytest

from tests.e2e.conftest import SCENARIOS, muster, status
from tests.polling import wait_for

pytestmark = [pytest.mark.nats, pytest.mark.postgres, pytest.mark.slow]


def explained(live, job: str, words: str):
    story = json.loads(muster(live, "why", job, "--json").stdout)
    return story if any(words in (e.get("text") or "") for e in story["timeline"]) else None


def test_why_explains_a_queue_limit_and_a_gang_that_does_not_fit(live):
    muster(live, "apply", "-f", str(SCENARIOS / "waiting-for-reasons.yaml"))
    wait_for(
        lambda: status(live)["jobs"].get("fits", {}).get("status") == "running", what="the fitting job to run"
    )
    limit = wait_for(lambda: explained(live, "over-the-limit", "limit"), what="a limit explanation")
    assert (
        limit["status"] == "pending" and "capped" in limit["reason"] and "limit of 2 gpu" in limit["reason"]
    )
    gang = wait_for(lambda: explained(live, "too-big-a-gang", "does not fit"), what="a gang explanation")
    assert "gang of 3 pods" in gang["reason"]
    ran = json.loads(muster(live, "why", "fits", "--json").stdout)
    assert [e["kind"] for e in ran["timeline"]][:1] == ["created"] and "started on node-" in ran["timeline"][
        -1
    ]["text"]
    text = muster(live, "why", "too-big-a-gang").stdout
    assert "now waiting because: gang of 3 pods does not fit" in text


def test_why_of_an_unknown_job_says_so(live):
    result = muster(live, "why", "nobody", check=False)
    assert result.returncode == 1 and "no job named 'nobody'" in result.stderr
