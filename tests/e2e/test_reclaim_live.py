"""Idle GPUs lent to another queue come back when their owner submits: live, checked from the log."""

from __future__ import annotations

import json

import pytest
from muster.chaos.checks import double_binds, over_capacity
from muster.events import EvictionRequested

from tests.e2e.conftest import SCENARIOS, log_of, muster, run, status
from tests.polling import wait_for

pytestmark = [pytest.mark.nats, pytest.mark.postgres, pytest.mark.slow]

OWNER = """apiVersion: muster.dev/v1
kind: Job
metadata: {name: owner}
spec: {queue: team-a, pods: [{count: 4, resources: {gpu: 1}}]}
"""


def test_borrowed_gpus_are_reclaimed_for_their_owner_without_ever_over_committing_a_device(live, tmp_path):
    muster(live, "apply", "-f", str(SCENARIOS / "lend-then-reclaim.yaml"))
    borrowers = [f"borrow-{i}" for i in range(1, 5)]
    wait_for(lambda: all(status(live)["jobs"].get(j, {}).get("status") == "running" for j in borrowers),
             what="team-b borrowing all eight GPUs")  # fmt: skip
    owner = tmp_path / "owner.yaml"
    owner.write_text(OWNER)
    muster(live, "submit", "-f", str(owner))

    state = wait_for(lambda: (s := status(live))["jobs"].get("owner", {}).get("status") == "running" and s,
                     what="the owner's job bound")  # fmt: skip
    assert sum(state["jobs"][j]["status"] == "running" for j in borrowers) == 2
    assert state["queues"]["team-a"]["allocated"]["gpu"] == 4.0

    log = run(log_of(live))
    evictions = [e for m in log for e in m.events if isinstance(e, EvictionRequested)]
    assert (
        evictions
        and {e.action for e in evictions} == {"reclaim"}
        and {e.for_job for e in evictions} == {"owner"}
    )
    assert over_capacity(log) == [] and double_binds(log) == []

    reclaimed = next(e.job for e in evictions)
    story = json.loads(muster(live, "why", reclaimed, "--json").stdout)
    assert any("reclaim" in e["text"] and "owner" in e["text"] for e in story["timeline"])
