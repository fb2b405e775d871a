"""``muster``: the one entry point (see spec/cli.md)."""

from __future__ import annotations

import argparse
import importlib
import sys
from dataclasses import dataclass
from functools import partial

from muster.cli.common import CliError
from muster.cli.parsing import LazySubParsers, SuggestingParser, VersionAction


@dataclass(frozen=True)
class Command:
    """A subcommand as ``muster --help`` lists it. Its ``module`` is imported, and its
    ``register(subparsers)`` adds the parser (with ``set_defaults(run=fn)``), only when the command is
    run or asked for its help: listing every command must not load what each one needs."""

    name: str
    module: str
    help: str | None
    """One line for the list of commands; None: listed nowhere (a helper for scripts)."""


COMMANDS = (
    Command("up", "muster.cli.up_cmd", "start NATS, Postgres and every service until Ctrl-C"),
    Command(
        "demo",
        "muster.cli.demo_cmd",
        "start muster and run a realistic mixed workload on a simulated GPU fleet",
    ),
    Command(
        "submit",
        "muster.cli.submit_cmd",
        "emit a workload (any supported framework manifest) as WorkloadSubmitted",
    ),
    Command(
        "apply",
        "muster.cli.apply_cmd",
        "publish a scenario file's nodes, queues and jobs to the running system",
    ),
    Command("queues", "muster.cli.queues_cmd", "create or update queues"),
    Command("status", "muster.cli.status_cmd", "queues, jobs and nodes of the running system"),
    Command("group", "muster.cli.group_cmd", "show the pod groups the podgrouper makes of a manifest"),
    Command(
        "simulate", "muster.cli.simulate_cmd", "run scenario files through the real allocator, in process"
    ),
    Command("replay", "muster.cli.replay_cmd", "re-derive decisions from the recorded log and diff them"),
    Command(
        "report",
        "muster.cli.report_cmd",
        "waits, fair share over time, lost work and utilisation from any log or scenario",
    ),
    Command(
        "snapshots",
        "muster.cli.snapshots_cmd",
        "each fold's state snapshots; `forget FOLD` drops those of a fold that no longer runs",
    ),
    Command("why", "muster.cli.why_cmd", "why a job is pending or was preempted, from recorded decisions"),
    Command(
        "agent",
        "muster.cli.agent_cmd",
        "run the pods bound to this machine as processes (one agent per machine)",
    ),
    Command(
        "run",
        "muster.cli.run_cmd",
        "run a command on the machines `muster agent` serves: muster run --queue Q --gpus 1 -- python train.py",
    ),
    Command("logs", "muster.cli.logs_cmd", "a pod's output (stdout and stderr), from the agent of its node"),
    Command(
        "cancel", "muster.cli.cancel_cmd", "delete a job: its pods stop and its resources return to the queue"
    ),
    Command(
        "tenant",
        "muster.cli.tenant_cmd",
        "declare teams that submit and cancel only on their own queues and jobs",
    ),
    Command(
        "secret",
        "muster.cli.secret_cmd",
        "values a job's environment names (--secret-env) that the log and the database never hold",
    ),
    Command(
        "node",
        "muster.cli.node_cmd",
        "give each machine's agent a NATS login that speaks for its own node only",
    ),
    Command("completion", "muster.cli.completion_cmd", "print a shell completion script (bash or zsh)"),
    Command("bench", "muster.cli.bench_cmd", "the benchmark suite"),
    Command("__complete", "muster.cli.complete_cmd", None),
)


def _register(command: Command, sub: argparse._SubParsersAction) -> None:
    importlib.import_module(command.module).register(sub)
    # Errors name the subcommand from here: `command` itself may be a subcommand's own argument
    # (`muster run`'s command line).
    sub.choices[command.name].set_defaults(subcommand=command.name)


def build_parser() -> argparse.ArgumentParser:
    """The whole command line; each command's own parser is built when it is first used."""
    parser = SuggestingParser(
        prog="muster",
        description="An event-sourced GPU cluster scheduler: fair-share queues, gangs, GPU sharing, replayable decisions.",
    )
    parser.add_argument("--version", action=VersionAction)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", action=LazySubParsers)
    for command in COMMANDS:
        sub.add_lazy(command.name, command.help, partial(_register, command))
    return parser


def _configure_tracing() -> None:
    """Spans of what the CLI submits start each job's trace, exported only where OTEL_* says; with
    nowhere to export them, OpenTelemetry is not even loaded."""
    from muster.span_export import requested

    if requested():
        from muster import telemetry

        telemetry.configure("muster-cli")


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    _configure_tracing()
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
