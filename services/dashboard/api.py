"""The dashboard's HTTP surface: JSON endpoints over the projection, and the static page.

Read-only: every handler runs one or a few SELECTs on the pool it is given.
Bad query parameters answer 400 with ``{"error", "field"}`` naming the
parameter (``query.limit``); unknown names answer 404 the same way.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import asyncpg
import msgspec
from muster.store import timeline
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from services.dashboard import queries

STATIC = Path(__file__).parent / "static"
_encoder = msgspec.json.Encoder()


class JSON(Response):
    media_type = "application/json"

    def __init__(self, content: Any, status_code: int = 200):
        super().__init__(content, status_code, headers={"cache-control": "no-store"})

    def render(self, content: Any) -> bytes:
        return _encoder.encode(content)


class BadParam(Exception):
    def __init__(self, field: str, error: str, status: int = 400):
        super().__init__(f"{field}: {error}")
        self.field, self.error, self.status = field, error, status


def _number_param(request: Request, name: str, default, low, high, parse=int, kind: str = "a whole number"):
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = parse(raw)
    except ValueError:
        raise BadParam(f"query.{name}", f"must be {kind}, got {raw!r}") from None
    if not low <= value <= high:
        raise BadParam(f"query.{name}", f"must be between {low} and {high}, got {value}")
    return value


def _int_param(request: Request, name: str, default: int, low: int, high: int) -> int:
    return _number_param(request, name, default, low, high)


def _float_param(request: Request, name: str, default: float, low: float, high: float) -> float:
    # nan and inf parse as floats but are no number of hours.
    return _number_param(request, name, default, low, high, parse=_finite, kind="a number")


def _finite(raw: str) -> float:
    value = float(raw)
    if value != value or value in (float("inf"), float("-inf")):
        raise ValueError(raw)
    return value


def create_app(pool: asyncpg.Pool) -> Starlette:
    """The dashboard application reading from ``pool`` (search_path set to the system's schema)."""

    async def index(request: Request) -> Response:
        return FileResponse(STATIC / "index.html", headers={"cache-control": "no-cache"})

    async def health(request: Request) -> Response:
        await pool.fetchval("SELECT 1")
        return JSON({"ok": True})

    async def overview(request: Request) -> Response:
        return JSON(await queries.overview(pool))

    async def queue_list(request: Request) -> Response:
        return JSON({"queues": await queries.queues(pool)})

    async def job_list(request: Request) -> Response:
        status = request.query_params.get("status") or None
        if status is not None and status not in queries.JOB_STATUSES:
            raise BadParam(
                "query.status", f"must be one of {', '.join(queries.JOB_STATUSES)}, got {status!r}"
            )
        limit = _int_param(request, "limit", 200, 1, 5000)
        queue = request.query_params.get("queue") or None
        in_queues = None
        if queue is not None:
            in_queues = queries.descendants(await queries.queues(pool), queue)
            if not in_queues:
                raise BadParam("query.queue", f"no queue named {queue!r}", 404)
        search = (request.query_params.get("q") or "").strip() or None
        found = await queries.jobs(pool, in_queues=in_queues, status=status, search=search, limit=limit)
        return JSON(found)

    async def job_detail(request: Request) -> Response:
        name = request.path_params["name"]
        found = await queries.job(pool, name)
        if found is None:
            raise BadParam("path.name", f"no job named {name!r}", 404)
        return JSON(found)

    async def job_why(request: Request) -> Response:
        name = request.path_params["name"]
        if await pool.fetchval("SELECT 1 FROM jobs WHERE name = $1", name) is None:
            raise BadParam("path.name", f"no job named {name!r}", 404)
        return JSON({"job": name, "timeline": await timeline.load(pool, name)})

    async def node_list(request: Request) -> Response:
        return JSON(await queries.nodes(pool, limit=_int_param(request, "limit", 500, 1, 100_000)))

    async def activity(request: Request) -> Response:
        limit = _int_param(request, "limit", 50, 1, 500)
        after = _int_param(request, "after", 0, 0, 2**62)
        return JSON({"decisions": await queries.activity(pool, limit=limit, after=after)})

    async def history(request: Request) -> Response:
        hours = _float_param(request, "hours", 3.0, 0.25, 48.0)
        return JSON(await queries.history(pool, hours=hours))

    async def bad_param(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, BadParam)
        return JSON({"error": exc.error, "field": exc.field}, exc.status)

    async def database_down(request: Request, exc: Exception) -> Response:
        return JSON({"error": f"the projection database is unavailable: {exc}", "field": ""}, 503)

    routes = [
        Route("/", index),
        Route("/healthz", health),
        Route("/api/overview", overview),
        Route("/api/queues", queue_list),
        Route("/api/jobs", job_list),
        Route("/api/jobs/{name}", job_detail),
        Route("/api/jobs/{name}/why", job_why),
        Route("/api/nodes", node_list),
        Route("/api/activity", activity),
        Route("/api/history", history),
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
    ]
    return Starlette(
        routes=routes,
        exception_handlers={
            BadParam: bad_param,
            asyncpg.PostgresConnectionError: database_down,
            ConnectionError: database_down,
        },
    )
