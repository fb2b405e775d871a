"""``muster demo``: ``up``, then a realistic mixed workload on a simulated GPU fleet, live."""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "demo", help="start muster and run a realistic mixed workload on a simulated GPU fleet"
    )
    p.add_argument("--nodes", type=int, default=12, help="8-GPU nodes in the simulated fleet (default 12)")
    p.add_argument("--jobs", type=int, default=60, help="jobs to submit (default 60)")
    p.add_argument("--timeout", type=float, default=180.0, help="give up after this many seconds")
    p.add_argument(
        "--keep",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="keep the system up after the demo, until Ctrl-C (default: when run in a terminal)",
    )
    p.set_defaults(run=_run)


def _run(args: argparse.Namespace) -> int:
    from muster.cli.demo_run import run

    return run(args)
