"""The restart benchmark runs end to end on a short history: an allocator restarted decides, a window replays."""

from __future__ import annotations

import pytest
from muster.bench import restart
from muster.runtime.settings import Endpoints

pytestmark = [pytest.mark.slow, pytest.mark.nats]


async def test_a_restarted_allocator_decides_and_a_window_of_the_history_replays(endpoints, tmp_path):
    rows = await restart._measure(Endpoints(nats_url=endpoints.nats_url, pg_dsn=""), 3_000, tmp_path)
    cold, window = rows
    assert cold["value"] > 0 and cold["without_snapshots_s"] > 0
    assert window["divergences"] == 0 and window["cycles"] > 0
