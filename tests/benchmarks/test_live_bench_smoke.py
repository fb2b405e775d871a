"""Small smoke runs of the live benchmarks: they run, bind everything, and report in the spec's shape."""

from __future__ import annotations

import pytest
from muster.bench import replay
from muster.bench.e2e import run_e2e, run_failover

pytestmark = [pytest.mark.slow]


@pytest.mark.nats
@pytest.mark.postgres
def test_e2e_bench_binds_every_pod_and_reports_rate_and_latency():
    doc = run_e2e(20, 200, rate=500.0)
    assert doc["bound"] == doc["pods"] == 200 and doc["nodes"] == 20 and doc["offered_rate"] == 500.0
    assert doc["binds_per_second"] > 0
    # the contract's window ends at the last confirmation; the projection may still be catching up then
    assert 0 < doc["confirmed_seconds"] <= doc["total_seconds"]
    assert doc["binds_per_second"] == pytest.approx(200 / doc["confirmed_seconds"], rel=0.01)
    assert doc["binds_per_second_until_projected"] == pytest.approx(200 / doc["total_seconds"], rel=0.01)
    assert 0 < doc["latency_ms"]["p50"] <= doc["latency_ms"]["p99"]
    # where the CPU went: every service, the servers, and the rest of the machine
    cpu = doc["cpu_seconds"]
    assert {"projector", "podgrouper", "allocator", "binder", "nats", "postgres", "other"} <= cpu.keys()
    assert cpu["allocator"] > 0 and cpu["postgres"] > 0


def test_replay_bench_replays_a_simulated_history_without_divergence():
    (row,) = replay.run(quick=True)
    assert row["unit"] == "events/s" and row["value"] > 0 and row["divergences"] == 0


@pytest.mark.nats
@pytest.mark.postgres
def test_failover_bench_splits_kill_to_first_decision_into_takeover_and_first_cycle():
    doc = run_failover(20, 200)
    assert doc["bound"] == 200 and doc["lease_ttl"] == 5.0 and doc["target"] == 2.0
    assert doc["value"] == pytest.approx(doc["takeover_s"] + doc["first_cycle_s"], abs=0.01)
    assert doc["takeover_s"] > 0 and doc["first_cycle_s"] > 0
    # the standby saw the leader gone: it did not wait for the lease, which still ran for seconds
    assert doc["lease_left_at_takeover_s"] > 0
