"""Where a command reads a recorded log from: a saved file, a running system's stream or its archive.

One home for ``muster replay``, ``muster report`` and the what-if; imported only when one of them runs.
"""

from __future__ import annotations

import asyncio
import contextlib

import msgspec

from muster.cli.common import fail
from muster.replay import LoggedMessage, load_log, log_from_nats, log_from_postgres
from muster.replay_window import ArchiveLog, StreamLog, Window, read_window
from muster.runtime.embedded import embedded_servers
from muster.runtime.settings import Endpoints, NoRunningSystem, Settings
from muster.subjects import Subjects

BUS_WAIT = 5.0
"""Seconds a replay from the archive waits for the bus, for its snapshots, before doing without."""


def read_saved_log(path: str) -> tuple[list[LoggedMessage], Subjects]:
    """A log saved with ``--save``, and the subjects it names; bad input names the file."""
    try:
        log = load_log(path)
    except (OSError, msgspec.DecodeError, msgspec.ValidationError) as exc:
        fail(f"{path}: not a muster log: {exc}")
    # A saved log names its own subjects; their first token is the system's prefix.
    return log, Subjects(log[0].subject.split(".")[0] if log else "muster")


def read_log(source: str) -> tuple[list[LoggedMessage], Subjects]:
    """The log of the running system; or, after it stopped, of the data its home keeps."""
    settings = Settings.from_env()
    try:
        return asyncio.run(_read_log(settings.endpoints(), source))
    except NoRunningSystem:
        if not (settings.home / "nats").is_dir():
            raise
    with embedded_servers(settings.home, nats=True, postgres=source == "postgres") as (nats_url, pg_dsn):
        endpoints = Endpoints(nats_url=nats_url, pg_dsn=pg_dsn or "", prefix=settings.prefix)
        return asyncio.run(_read_log(endpoints, source))


def read_replay_input(source: str, from_seq: int, to_seq: int | None) -> tuple[Window, Subjects]:
    """What replay reads: the window, from the stream or the archive, and the snapshots its folds start
    from (the whole log for a window from the start)."""
    settings = Settings.from_env()
    try:
        return asyncio.run(_read_window(settings.endpoints(), source, from_seq, to_seq))
    except NoRunningSystem:
        if not (settings.home / "nats").is_dir():
            raise
    with embedded_servers(settings.home, nats=True, postgres=source == "postgres") as (nats_url, pg_dsn):
        endpoints = Endpoints(nats_url=nats_url, pg_dsn=pg_dsn or "", prefix=settings.prefix)
        return asyncio.run(_read_window(endpoints, source, from_seq, to_seq))


async def _read_window(
    endpoints: Endpoints, source: str, from_seq: int, to_seq: int | None
) -> tuple[Window, Subjects]:
    from muster.bus import NatsBus
    from muster.snapshots import ObjectStoreSnapshots

    if source != "postgres":
        bus = await NatsBus.connect(endpoints.nats_url, endpoints.subjects, service="muster-replay")
        try:
            store = await ObjectStoreSnapshots.open(bus.js, endpoints.subjects.stream)
            return await read_window(
                StreamLog(bus), store, endpoints.subjects, from_seq, to_seq
            ), endpoints.subjects
        finally:
            await bus.close()
    from muster.store import connect

    # The archive replays without the bus; with it, a window starts from the snapshots it keeps.
    bus = store = None
    with contextlib.suppress(Exception):
        bus = await asyncio.wait_for(
            NatsBus.connect(endpoints.nats_url, endpoints.subjects, service="muster-replay"), BUS_WAIT
        )
        store = await asyncio.wait_for(ObjectStoreSnapshots.open(bus.js, endpoints.subjects.stream), BUS_WAIT)
    conn = await connect(endpoints.reader_dsn, endpoints.prefix)
    try:
        return await read_window(
            ArchiveLog(conn), store, endpoints.subjects, from_seq, to_seq
        ), endpoints.subjects
    finally:
        await conn.close()
        if bus is not None:
            await bus.close()


async def _read_log(endpoints: Endpoints, source: str) -> tuple[list[LoggedMessage], Subjects]:
    if source == "postgres":
        from muster.store import connect

        conn = await connect(endpoints.reader_dsn, endpoints.prefix)
        try:
            return await log_from_postgres(conn), endpoints.subjects
        finally:
            await conn.close()
    from muster.bus import NatsBus

    bus = await NatsBus.connect(endpoints.nats_url, endpoints.subjects, service="muster-replay")
    try:
        return await log_from_nats(bus), endpoints.subjects
    finally:
        await bus.close()
