"""``muster snapshots``: what each fold keeps; ``muster snapshots forget FOLD``: drop a gone fold's.

A fold that stops taking snapshots (a machine agent taken out of service)
holds the stream's retention where its newest snapshot is, for good:
forgetting its snapshots lets the projector purge past it.
"""

from __future__ import annotations

import argparse
import time
from typing import TYPE_CHECKING

from muster.cli.common import BAD_INPUT, CHECK_FAILED, fail, print_json, running_endpoints

if TYPE_CHECKING:
    from muster import snapshots as sn
    from muster.bus import NatsBus


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("snapshots")
    p.add_argument("--json", action="store_true", help="print JSON")
    actions = p.add_subparsers(dest="action", metavar="ACTION")
    forget = actions.add_parser(
        "forget",
        help="delete every snapshot of a fold that no longer runs (a decommissioned agent), so the "
        "stream's retention may purge past it",
    )
    forget.add_argument("fold", help="the fold's name, as `muster snapshots` lists it (e.g. agent-gpu-7)")
    forget.add_argument(
        "--force",
        action="store_true",
        help="forget a service's fold too: it then restarts from what the stream still holds",
    )
    forget.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(run=_run)


async def list_folds(bus: NatsBus) -> list[sn.FoldSnapshots]:
    """Every fold with snapshots, in every writer's store."""
    from muster import snapshots as sn

    owned = []
    for owner, store in await sn.existing_stores(bus.js, bus.subjects.stream):
        owned += [(owner, meta) for meta in await store.list()]
    return sn.by_fold(owned)


async def forget(bus: NatsBus, fold: str) -> int:
    """Delete every snapshot of ``fold``; how many there were."""
    from muster.snapshots import existing_stores

    gone = 0
    for _, store in await existing_stores(bus.js, bus.subjects.stream):
        for meta in await store.list(fold):
            await store.delete(meta)
            gone += 1
    return gone


def _run(args: argparse.Namespace) -> int:
    import asyncio

    from muster.bus import NatsBus

    endpoints = running_endpoints()

    async def main() -> int:
        bus = await NatsBus.connect(endpoints.nats_url, endpoints.subjects, service="muster-snapshots")
        try:
            folds = await list_folds(bus)
            if args.action == "forget":
                return await _forget(bus, folds, args)
            _show(folds, await bus.first_seq(), args.json)
            return 0
        finally:
            await bus.close()

    return asyncio.run(main())


async def _forget(bus: NatsBus, folds: list[sn.FoldSnapshots], args: argparse.Namespace) -> int:
    from muster.snapshots import is_service_fold

    names = sorted(f.fold for f in folds)
    if args.fold not in names:
        fail(
            f"no snapshots of {args.fold!r}; folds with snapshots: {', '.join(names) or 'none'}", CHECK_FAILED
        )
    if is_service_fold(args.fold) and not args.force:
        fail(
            f"{args.fold} is a service's fold: it restarts from its snapshots, and without them from what the "
            "stream still holds, which lacks what retention purged. Stop it for good first, then pass --force",
            BAD_INPUT,
        )
    count = await forget(bus, args.fold)
    if args.json:
        print_json({"fold": args.fold, "forgotten": count})
    else:
        print(f"forgot {count} snapshots of {args.fold}")
    return 0


def _show(folds: list[sn.FoldSnapshots], first_seq: int, as_json: bool) -> None:
    if as_json:
        print_json({"stream_first_seq": first_seq, "folds": folds})
        return
    if not folds:
        print("no snapshots yet")
        return
    now = time.time()
    print(f"{'FOLD':<28} {'SNAPSHOTS':>9} {'NEWEST AT':>11} {'TAKEN':>12} {'SIZE':>10}")
    for f in folds:
        print(
            f"{f.fold:<28} {f.count:>9} {f.newest_seq:>11} {_ago(now - f.newest_taken_at):>12} "
            f"{_size(f.size):>10}"
        )
    print(f"the stream starts at sequence {first_seq}; {folds[0].fold}'s newest snapshot is the oldest")


def _ago(seconds: float) -> str:
    for unit, length in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= length:
            return f"{seconds / length:.0f} {unit} ago"
    return f"{max(seconds, 0):.0f} s ago"


def _size(n: int) -> str:
    for unit, length in (("GB", 2**30), ("MB", 2**20), ("kB", 2**10)):
        if n >= length:
            return f"{n / length:.1f} {unit}"
    return f"{n} B"
