"""``muster``: the one entry point (see spec/cli.md)."""

from __future__ import annotations

import argparse
import importlib
import sys

from muster import telemetry
from muster.cli.common import CliError
from muster.cli.parsing import SuggestingParser, version

# Each module adds its subparser with register(subparsers) and set_defaults(run=fn).
COMMANDS = (
    "muster.cli.up_cmd",
    "muster.cli.demo_cmd",
    "muster.cli.submit_cmd",
    "muster.cli.apply_cmd",
    "muster.cli.queues_cmd",
    "muster.cli.status_cmd",
    "muster.cli.group_cmd",
    "muster.cli.simulate_cmd",
    "muster.cli.replay_cmd",
    "muster.cli.report_cmd",
    "muster.cli.snapshots_cmd",
    "muster.cli.why_cmd",
    "muster.cli.agent_cmd",
    "muster.cli.run_cmd",
    "muster.cli.logs_cmd",
    "muster.cli.cancel_cmd",
    "muster.cli.tenant_cmd",
    "muster.cli.completion_cmd",
    "muster.cli.bench_cmd",
)


def build_parser() -> argparse.ArgumentParser:
    parser = SuggestingParser(
        prog="muster",
        description="An event-sourced GPU cluster scheduler: fair-share queues, gangs, GPU sharing, replayable decisions.",
    )
    parser.add_argument("--version", action="version", version=f"muster {version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        importlib.import_module(name).register(sub)
    # Errors name the subcommand from here: `command` itself may be a subcommand's own argument
    # (`muster run`'s command line).
    for name, subparser in sub.choices.items():
        subparser.set_defaults(subcommand=name)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    # Spans of what the CLI submits start each job's trace (exported only where OTEL_* says).
    telemetry.configure("muster-cli")
    if not getattr(args, "run", None):
        parser.print_help()
        return 2
    try:
        return int(args.run(args) or 0)
    except CliError as exc:
        print(f"muster {args.subcommand}: {exc}", file=sys.stderr)
        return exc.code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # output piped into `head` and the like
        return 0


if __name__ == "__main__":
    sys.exit(main())
