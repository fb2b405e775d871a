"""The dashboard's guard, through its real HTTP server: which hosts it answers, its token, its headers.

The attacks: a page elsewhere framing the dashboard or sniffing its types
(headers), a rebound DNS name reading the API from the victim's browser
(Host), anyone on the network reading it when it listens beyond loopback
(token).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import stat
from collections.abc import AsyncIterator
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest
from muster.runtime.settings import Settings
from muster.service import ServiceContext

from services.dashboard.app import TOKEN_FILE, URL_FILE, DashboardConfigError, allowed_names, guard_for, run
from services.dashboard.guard import SECURITY_HEADERS, Guard

STATIC = Path(__file__).resolve().parents[2] / "services" / "dashboard" / "static"
HEADERS = {
    "content-security-policy": "default-src 'self'; frame-ancestors 'none'",
    "x-content-type-options": "nosniff",
    "x-frame-options": "DENY",
    "referrer-policy": "no-referrer",
}


@contextlib.asynccontextmanager
async def dashboard(home: Path, endpoints, **env: str) -> AsyncIterator[str]:
    """The dashboard service on a free port with ``env``; yields the address it records."""
    extra = {"MUSTER_DASHBOARD_PORT": "0", **env}
    settings = Settings(home=home, prefix=endpoints.prefix, extra=extra)
    ctx = ServiceContext(name="dashboard", settings=settings, endpoints=endpoints, bus=None)
    task = asyncio.create_task(run(ctx))
    try:
        url_file = home / URL_FILE
        for _ in range(400):
            if url_file.exists() or task.done():
                break
            await asyncio.sleep(0.05)
        if task.done():
            await task
        yield json.loads(url_file.read_text())["url"]
    finally:
        ctx.stop.set()
        await asyncio.wait_for(task, 10)


def local(url: str) -> str:
    """The address to connect to (loopback, whatever the dashboard listens on), without the fragment."""
    return f"http://127.0.0.1:{urlsplit(url).port}"


@pytest.mark.postgres
async def test_every_response_carries_the_security_headers(tmp_path, endpoints, pg_pool):
    async with dashboard(tmp_path, endpoints) as url, httpx.AsyncClient(base_url=local(url)) as http:
        answers = [
            await http.get(path) for path in ("/", "/static/app.js", "/api/overview", "/api/jobs/nope")
        ]
        answers.append(await http.get("/api/overview", headers={"host": "rebound.example"}))
    assert [a.status_code for a in answers] == [200, 200, 200, 404, 421]
    for answer in answers:
        assert {k: answer.headers.get(k) for k in HEADERS} == HEADERS, answer.url


@pytest.mark.postgres
async def test_a_rebound_dns_name_cannot_read_the_api(tmp_path, endpoints, pg_pool):
    async with dashboard(tmp_path, endpoints) as url, httpx.AsyncClient(base_url=local(url)) as http:
        port = urlsplit(url).port
        rebound = await http.get("/api/overview", headers={"host": f"rebound.example:{port}"})
        ours = [
            await http.get("/api/overview", headers={"host": f"{h}:{port}"}) for h in ("localhost", "[::1]")
        ]
    assert rebound.status_code == 421
    assert rebound.json()["field"] == "header.host"
    assert (
        "'rebound.example'" in rebound.json()["error"] and "MUSTER_DASHBOARD_HOSTS" in rebound.json()["error"]
    )
    assert "jobs" not in rebound.json()
    assert [a.status_code for a in ours] == [200, 200]


@pytest.mark.postgres
async def test_a_configured_name_is_answered(tmp_path, endpoints, pg_pool):
    async with (
        dashboard(tmp_path, endpoints, MUSTER_DASHBOARD_HOSTS="muster.lab.example, other.example") as url,
        httpx.AsyncClient(base_url=local(url)) as http,
    ):
        answer = await http.get("/api/overview", headers={"host": "muster.lab.example"})
    assert answer.status_code == 200


@pytest.mark.postgres
async def test_on_loopback_the_api_takes_no_token_and_none_is_made(tmp_path, endpoints, pg_pool):
    async with dashboard(tmp_path, endpoints) as url, httpx.AsyncClient(base_url=local(url)) as http:
        assert (await http.get("/api/overview")).status_code == 200
    assert "#" not in url
    assert not (tmp_path / "secrets" / TOKEN_FILE).exists()


@pytest.mark.postgres
async def test_beyond_loopback_the_data_takes_the_token_the_recorded_address_carries(
    tmp_path, endpoints, pg_pool
):
    async with (
        dashboard(tmp_path, endpoints, MUSTER_DASHBOARD_HOST="0.0.0.0") as url,
        httpx.AsyncClient(base_url=local(url)) as http,
    ):
        token = (tmp_path / "secrets" / TOKEN_FILE).read_text().strip()
        without = [await http.get(p) for p in ("/api/overview", "/api/jobs", "/healthz")]
        wrong = await http.get("/api/overview", headers={"authorization": "Bearer not-the-token"})
        right = await http.get("/api/overview", headers={"authorization": f"Bearer {token}"})
        page = [await http.get(p) for p in ("/", "/static/app.js")]
        modes = [
            stat.S_IMODE(f.stat().st_mode) for f in (tmp_path / "secrets" / TOKEN_FILE, tmp_path / URL_FILE)
        ]
    assert urlsplit(url).fragment == f"token={token}"
    assert modes == [0o600, 0o600]  # the token's file, and the address that carries it
    assert [a.status_code for a in without] == [401, 401, 401]
    assert without[0].json()["field"] == "header.authorization"
    assert without[0].headers["www-authenticate"].startswith("Bearer")
    assert wrong.status_code == 401
    assert right.status_code == 200 and "jobs" in right.json()
    assert [a.status_code for a in page] == [200, 200]  # the page holds no data, and asks for the token


def test_the_token_is_kept_for_the_next_start_and_a_given_one_wins(tmp_path):
    first = guard_for("0.0.0.0", {}, tmp_path).token
    assert first and guard_for("0.0.0.0", {}, tmp_path).token == first
    assert guard_for("10.1.2.3", {"MUSTER_DASHBOARD_TOKEN": "given"}, tmp_path).token == "given"
    assert guard_for("127.0.0.1", {}, tmp_path).token is None
    assert guard_for("localhost", {}, tmp_path).token is None


@pytest.mark.parametrize(
    ("host", "answered"),
    [
        ("127.0.0.1:8765", True),
        ("localhost", True),
        ("LOCALHOST.:8765", True),
        ("[::1]:8765", True),
        ("127.0.0.2", True),
        ("10.1.2.3:8765", False),  # an address this dashboard does not listen on
        ("rebound.example", False),
        ("localhost.rebound.example", False),
    ],
)
def test_on_loopback_only_loopback_names_and_addresses_are_answered(host, answered):
    guard = Guard.for_listen("127.0.0.1")
    assert (guard.refusal("/api/overview", host, None) is None) is answered


def test_listening_on_every_address_answers_any_address_but_only_known_names():
    guard = Guard.for_listen("0.0.0.0", ["gpu-box"], token="t")
    bearer = "Bearer t"
    assert guard.refusal("/api/jobs", "10.1.2.3:8765", bearer) is None
    assert guard.refusal("/api/jobs", "[2001:db8::5]:8765", bearer) is None
    assert guard.refusal("/api/jobs", "gpu-box:8765", bearer) is None
    assert guard.refusal("/api/jobs", "rebound.example:8765", bearer).status == 421


def test_a_request_without_a_host_is_refused_naming_the_header():
    refused = Guard.for_listen("127.0.0.1").refusal("/", None, None)
    assert (refused.status, refused.field) == (400, "header.host")


@pytest.mark.parametrize("authorization", [None, "", "Bearer", "Basic dDp0", "Bearer t2", "t"])
def test_the_data_wants_exactly_the_bearer_token(authorization):
    refused = Guard.for_listen("10.1.2.3", token="t").refusal("/api/queues", "10.1.2.3", authorization)
    assert (refused.status, refused.field) == (401, "header.authorization")


@pytest.mark.parametrize("value", ["bad name", "a/b", "x_y.example"])
def test_a_configured_host_that_is_no_host_name_is_refused_naming_the_variable(value):
    with pytest.raises(DashboardConfigError, match="MUSTER_DASHBOARD_HOSTS"):
        allowed_names({"MUSTER_DASHBOARD_HOSTS": f"ok.example,{value}"})


def test_the_headers_are_the_ones_the_policy_names():
    assert {k.decode(): v.decode() for k, v in SECURITY_HEADERS} == HEADERS


def test_the_page_has_nothing_inline_the_content_security_policy_would_block():
    page = (STATIC / "index.html").read_text()
    script = (STATIC / "app.js").read_text()
    # Scripts and styles only from files of our own; no inline ones, no handlers or styles in markup,
    # nothing from elsewhere (data: URLs included).
    assert re.findall(r"<script(?![^>]*\bsrc=\"/static/)[^>]*>", page) == []
    assert "<style" not in page
    for text in (page, script):
        assert re.findall(r"""\sstyle=["']""", text) == []
        assert re.findall(r"""\son[a-z]+=["']""", text) == []
        assert re.findall(r"""(?:src|href)=["'](?!/|#)""", text) == []
