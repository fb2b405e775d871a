"""``muster replay``: re-derive recorded decisions from the log and diff them."""

from __future__ import annotations

import argparse


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
    p.add_argument(
        "--config",
        help="what-if: re-run history under these allocator settings (YAML of placement_gpu, placement_cpu, actions, ...)",
    )
    p.add_argument(
        "--queues", help="what-if: re-run history with these queues (our queue YAML or KAI Queue manifests)"
    )
    p.add_argument(
        "--drop-queues",
        action="store_true",
        help="what-if: let the --queues file leave out live queues (their jobs are stranded); refused otherwise",
    )
    p.add_argument(
        "--all", action="store_true", help="what-if: list every job (default: the first 20 of each change)"
    )
    p.add_argument(
        "--report",
        action="store_true",
        help="what-if: also each queue's `muster report` figures in both re-runs, side by side "
        "(in --json, under the key report)",
    )
    p.add_argument("--json", action="store_true", help="print one JSON document")
    p.set_defaults(run=_run)


def _run(args: argparse.Namespace) -> int:
    from muster.cli.replay_run import run

    return run(args)
