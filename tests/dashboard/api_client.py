"""The dashboard's JSON API over a Postgres projection of a given history, for tests."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
from muster.bus import Delivery
from muster.store.sink import PostgresSink

from services.dashboard.api import create_app


async def api_over(pg_pool, history: list[list]) -> AsyncIterator[httpx.AsyncClient]:
    """An HTTP client of the API once ``history`` (events per message, in order) is projected."""
    await PostgresSink(pg_pool).apply(
        [Delivery(subject="t.events", seq=i + 1, events=events) for i, events in enumerate(history)]
    )
    transport = httpx.ASGITransport(app=create_app(pg_pool))
    async with httpx.AsyncClient(transport=transport, base_url="http://dashboard") as http:
        yield http


async def get(client: httpx.AsyncClient, path: str, status: int = 200) -> dict:
    """GET ``path``, expecting ``status``; the JSON body."""
    response = await client.get(path)
    assert response.status_code == status, response.text
    return response.json()
