"""``muster __complete KIND [PREFIX]``: the names of a kind that start with PREFIX, one a line, read
from the running system's projection; what the shell completion script asks for as you type.

Hidden: not listed, not offered for a mistyped command. With no system to ask (none running, or
its Postgres unreachable within ``TIMEOUT``), it prints nothing on standard output, says why on
standard error and exits 1; the script discards that and completes nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import sys

from muster.cli.common import CHECK_FAILED, running_endpoints
from muster.cli.recorded import NAMES, projection

TIMEOUT = 2.0
"""Seconds to wait for the projection: a shell waits on every Tab."""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "__complete", description="Names of a kind that start with PREFIX, one a line, for shell completion."
    )
    p.add_argument("kind", choices=sorted(NAMES))
    p.add_argument("prefix", nargs="?", default="", help="what has been typed of the name")
    p.set_defaults(run=_run)


async def names(kind: str, prefix: str) -> list[str]:
    """The names of ``kind`` starting with ``prefix`` that the running system records."""
    async with projection(running_endpoints(), timeout=TIMEOUT) as conn:
        return await asyncio.wait_for(NAMES[kind](conn, prefix), TIMEOUT)


def _run(args: argparse.Namespace) -> int:
    import asyncpg

    from muster.store import StoreAccessError

    try:
        found = asyncio.run(names(args.kind, args.prefix))
    except (OSError, TimeoutError, asyncpg.PostgresError, asyncpg.InterfaceError, StoreAccessError) as exc:
        print(f"muster __complete: cannot read the projection: {exc}", file=sys.stderr)
        return CHECK_FAILED
    sys.stdout.write("".join(f"{name}\n" for name in found))
    return 0
