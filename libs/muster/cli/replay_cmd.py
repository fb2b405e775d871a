"""``muster replay``: re-derive recorded decisions from the log and diff them."""

from __future__ import annotations

import argparse
import asyncio

import msgspec

from muster.cli.common import CHECK_FAILED, fail, print_json
from muster.replay import LoggedMessage, load_log, log_from_nats, log_from_postgres, replay, save_log
from muster.runtime.embedded import embedded_servers
from muster.runtime.settings import Endpoints, NoRunningSystem, Settings
from muster.subjects import Subjects


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "replay",
        help="re-derive decisions from the recorded log and diff them",
        description="Rebuilds the allocator's state from the recorded events, re-runs every recorded cycle at its "
        "watermark and clock, and compares the decisions byte for byte. Exit 0: no divergence; 1: divergence.",
    )
    p.add_argument(
        "--from", dest="from_seq", type=int, default=0, help="first stream sequence whose cycles to check"
    )
    p.add_argument(
        "--to", dest="to_seq", type=int, default=None, help="last stream sequence whose cycles to check"
    )
    p.add_argument(
        "--source", choices=("nats", "postgres"), default="nats", help="where to read the log (default nats)"
    )
    p.add_argument("--log", help="replay a saved log file (JSON lines) instead of a running system")
    p.add_argument("--save", help="also write the log read to this file (JSON lines)")
    p.add_argument("--json", action="store_true", help="print one JSON document")
    p.set_defaults(run=_run)


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


async def _read_log(endpoints: Endpoints, source: str) -> tuple[list[LoggedMessage], Subjects]:
    if source == "postgres":
        from muster.store import connect

        conn = await connect(endpoints.pg_dsn, endpoints.prefix)
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


def _run(args: argparse.Namespace) -> int:
    if args.log:
        try:
            log = load_log(args.log)
        except (OSError, msgspec.DecodeError, msgspec.ValidationError) as exc:
            fail(f"{args.log}: not a muster log: {exc}")
        # A saved log names its own subjects; their first token is the system's prefix.
        subjects = Subjects(log[0].subject.split(".")[0] if log else "muster")
    else:
        try:
            log, subjects = read_log(args.source)
        except NoRunningSystem as exc:
            fail(str(exc), CHECK_FAILED)
    if args.save:
        save_log(log, args.save)
    report = replay(log, subjects, from_seq=args.from_seq, to_seq=args.to_seq)
    if args.json:
        print_json(report.to_builtins())
    else:
        print(
            f"replayed {report.cycles} cycles over {report.events} events "
            f"({report.events_per_second:,.0f} events/s): {report.divergences} divergences"
        )
        d = report.first_divergence
        if d is not None:
            print(
                f"first divergence: pool {d.pool}, cycle {d.cycle} (watermark {d.watermark}, clock {d.clock})"
            )
            print("  recorded:")
            for e in d.recorded:
                print(f"    {msgspec.json.encode(e).decode()}")
            print("  re-derived:")
            for e in d.rederived:
                print(f"    {msgspec.json.encode(e).decode()}")
            print(f"  the cycle read {len(d.read)} events since the previous one:")
            for seq, index, e in d.read[-20:]:
                print(f"    {seq}.{index} {msgspec.json.encode(e).decode()}")
    return CHECK_FAILED if report.divergences else 0
