"""The dashboard as a service: where it listens, that it says where, and that it stops when told."""

from __future__ import annotations

import asyncio
import json
import socket

import httpx
import pytest
from muster.runtime.settings import Settings
from muster.service import ServiceContext

from services.dashboard import app as dashboard_app
from services.dashboard.app import DEFAULT_PORT, URL_FILE, DashboardConfigError, listen_address, run


def test_it_listens_on_localhost_8765_unless_told_otherwise(monkeypatch):
    # Whether 8765 is free on this machine is not the point here (another system may hold it).
    monkeypatch.setattr(dashboard_app, "_free", lambda host, port: True)
    assert listen_address({}) == ("127.0.0.1", DEFAULT_PORT) == ("127.0.0.1", 8765)
    assert listen_address({"MUSTER_DASHBOARD_HOST": "0.0.0.0", "MUSTER_DASHBOARD_PORT": "9000"}) == (
        "0.0.0.0",
        9000,
    )


def test_it_takes_any_free_port_when_another_system_holds_the_default():
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        taken = holder.getsockname()[1]
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(dashboard_app, "DEFAULT_PORT", taken)
            assert listen_address({}) == ("127.0.0.1", 0)
            assert listen_address({"MUSTER_DASHBOARD_PORT": str(taken)}) == ("127.0.0.1", taken)


@pytest.mark.parametrize("port", ["http", "70000", "-1"])
def test_a_bad_port_is_refused_naming_the_variable(port):
    with pytest.raises(DashboardConfigError, match="MUSTER_DASHBOARD_PORT"):
        listen_address({"MUSTER_DASHBOARD_PORT": port})


@pytest.mark.postgres
async def test_the_service_serves_records_its_url_and_stops_when_told(tmp_path, endpoints, pg_pool):
    # pg_pool: drops the schema the service creates for this test afterwards.
    settings = Settings(home=tmp_path, prefix=endpoints.prefix, extra={"MUSTER_DASHBOARD_PORT": "0"})
    ctx = ServiceContext(name="dashboard", settings=settings, endpoints=endpoints, bus=None)  # reads no bus
    task = asyncio.create_task(run(ctx))
    url_file = tmp_path / URL_FILE
    for _ in range(200):
        if url_file.exists() or task.done():
            break
        await asyncio.sleep(0.05)
    url = json.loads(url_file.read_text())["url"]
    assert url.startswith("http://127.0.0.1:")
    async with httpx.AsyncClient() as http:
        assert (await http.get(url + "healthz")).json() == {"ok": True}
        assert (await http.get(url + "api/overview")).json()["jobs"]["running"] == 0
    ctx.stop.set()
    await asyncio.wait_for(task, 10)
    assert not url_file.exists()
