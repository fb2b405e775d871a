"""`muster snapshots`: every fold's snapshots listed from every writer's store; forgetting a gone fold's
lets retention move past it, and a service's fold is not forgotten without --force."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from muster import snapshots as sn
from muster.bus import NatsBus
from muster.retention import newest_snapshots

pytestmark = [pytest.mark.nats]


async def put(bus: NatsBus, owner: str, fold: str, seq: int) -> None:
    store = await sn.ObjectStoreSnapshots.open(bus.js, bus.subjects.stream, owner)
    await store.put(*sn.sealed(fold, seq, b"state", digest="d", format=1))


@pytest.fixture
async def stored(nats_bus):
    await put(nats_bus, "agent", "agent-gpu-7", 10)
    await put(nats_bus, "agent", "agent-gpu-7", 20)
    await put(nats_bus, "agent", "agent-gpu-8", 30)
    await put(nats_bus, "binder", "binder", 40)
    yield nats_bus
    for owner in ("agent", "binder"):
        await nats_bus.js.delete_object_store(sn.snapshot_bucket(nats_bus.subjects.stream, owner))


def muster(endpoints, *args: str) -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        "MUSTER_NATS_URL": endpoints.nats_url,
        "MUSTER_PG_DSN": endpoints.pg_dsn,
        "MUSTER_PREFIX": endpoints.prefix,
    }
    return subprocess.run(
        [sys.executable, "-m", "muster.cli.main", "snapshots", *args],
        env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip


async def test_every_fold_is_listed_with_its_count_and_newest(stored, endpoints):
    out = muster(endpoints, "--json")
    assert out.returncode == 0, out.stderr
    folds = {f["fold"]: f for f in json.loads(out.stdout)["folds"]}
    assert {name: (f["owner"], f["count"], f["newest_seq"]) for name, f in folds.items()} == {
        "agent-gpu-7": ("agent", 2, 20),
        "agent-gpu-8": ("agent", 1, 30),
        "binder": ("binder", 1, 40),
    }


async def test_forgetting_a_gone_agents_fold_lets_retention_move_past_it(stored, endpoints):
    out = muster(endpoints, "forget", "agent-gpu-7")
    assert out.returncode == 0, out.stderr
    assert "forgot 2 snapshots of agent-gpu-7" in out.stdout
    assert await newest_snapshots(stored.js, stored.subjects.stream) == {"agent-gpu-8": 30, "binder": 40}


async def test_a_services_fold_is_forgotten_only_with_force(stored, endpoints):
    refused = muster(endpoints, "forget", "binder")
    assert refused.returncode == 2 and "is a service's fold" in refused.stderr
    assert "binder" in await newest_snapshots(stored.js, stored.subjects.stream)
    assert muster(endpoints, "forget", "binder", "--force").returncode == 0
    assert "binder" not in await newest_snapshots(stored.js, stored.subjects.stream)


async def test_an_unknown_fold_is_named_with_the_folds_there_are(stored, endpoints):
    out = muster(endpoints, "forget", "agent-gpu-9")
    assert out.returncode == 1
    assert (
        "no snapshots of 'agent-gpu-9'; folds with snapshots: agent-gpu-7, agent-gpu-8, binder" in out.stderr
    )
