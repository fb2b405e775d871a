"""Every service answers /healthz, /readyz and /metrics; the allocator's metrics show its cycles."""

from __future__ import annotations

import json
import urllib.request

import pytest
from muster.runtime.system import SERVICES

from tests.e2e.conftest import SCENARIOS, muster, status
from tests.polling import wait_for

pytestmark = [pytest.mark.nats, pytest.mark.postgres, pytest.mark.slow]


def get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def address(live, service: str) -> str | None:
    path = live.settings.home / "http" / f"{service.replace('_', '-')}.json"
    return json.loads(path.read_text())["url"] if path.exists() else None


def test_every_service_is_healthy_ready_and_exports_metrics(live):
    urls = wait_for(lambda: {s: address(live, s) for s in SERVICES} if all(address(live, s) for s in SERVICES) else None,
                    what="every service to record its HTTP address")  # fmt: skip
    for service, url in urls.items():
        assert get(f"{url}/healthz") == (200, "ok\n"), service
        wait_for(lambda url=url: get(f"{url}/readyz")[0] == 200, what=f"{service} ready")
    muster(live, "apply", "-f", str(SCENARIOS / "two-queues-gang-and-fraction.yaml"))
    wait_for(
        lambda: all(j["status"] == "running" for j in status(live)["jobs"].values()) or None,
        what="jobs running",
    )
    _, metrics = get(f"{urls['allocator']}/metrics")
    assert 'muster_cycle_seconds_count{pool="default"}' in metrics
    assert 'muster_decisions_total{kind="bind",pool="default"} 6.0' in metrics
    assert 'muster_leader{pool="default"} 1.0' in metrics
    assert 'muster_queue_allocated{queue="team-a",resource="gpu"} 8.0' in metrics
    assert get(f"{urls['projector']}/nothing")[0] == 404
