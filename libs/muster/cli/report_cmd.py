"""``muster report``: how long jobs waited, what each queue got against its share, what evictions
destroyed — from a running system's log (the stream or the archive), a saved log, or a scenario run
through the simulator. The figures and the JSON document: docs/report.md."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from muster.cli.common import CHECK_FAILED, fail, print_json

if TYPE_CHECKING:
    from muster.events import Event

LONG_LOG = 50_000
"""Events from which a report on a terminal shows its progress."""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "report",
        help="waits, shares over time and lost work, from a log or a simulation",
        description="Reads a log (the running system's stream by default, its archive with --source "
        "postgres, a saved log with --log, or the log of a scenario FILE run through the simulator) and "
        "reports per queue: waits from submission to first bind (mean, p50, p99), completion times, "
        "GPU-hours used against its deserved share, time starved below its quota, GPU-hours borrowed and "
        "lent, evictions and the work they destroyed; and for the cluster: utilisation, makespan and "
        "Jain's index. See docs/report.md.",
    )
    p.add_argument(
        "scenario", nargs="?", metavar="FILE", help="a scenario file: simulate it, report on its log"
    )
    p.add_argument("--log", help="a saved log (JSON lines, as `muster replay --save` writes it)")
    p.add_argument(
        "--source",
        choices=("nats", "postgres"),
        help="where to read a running system's log (default nats; postgres: the archive)",
    )
    p.add_argument("--plots", metavar="DIR", help="also write PNG plots into DIR")
    p.add_argument("--json", action="store_true", help="print one JSON document")
    p.set_defaults(run=_run)


def _events(args: argparse.Namespace) -> list[Event]:
    """The events of the log the arguments name, in log order."""
    if args.scenario and args.log:
        fail("FILE and --log: one log at a time")
    if args.source and (args.scenario or args.log):
        fail("--source: only for a running system's log, not with FILE or --log")
    if args.scenario:
        from muster.report.simulated import ReportedSimulation
        from muster.scenario.errors import ScenarioError
        from muster.scenario.load import load_scenario

        try:
            scenario = load_scenario(args.scenario)
        except ScenarioError as exc:
            fail(str(exc))
        simulation = ReportedSimulation(scenario)
        simulation.run()
        return simulation.log.events
    from muster.cli.log_sources import read_log, read_saved_log
    from muster.replay import log_events
    from muster.runtime.settings import NoRunningSystem

    if args.log:
        log, subjects = read_saved_log(args.log)
    else:
        try:
            log, subjects = read_log(args.source or "nats")
        except NoRunningSystem as exc:
            fail(str(exc), CHECK_FAILED)
    return log_events(log, subjects)


def progress_line(total: int, stream=None) -> Callable[[int], None] | None:
    """A percentage line redrawn in place on ``stream`` (stderr) for a long log on a terminal; else None."""
    stream = stream or sys.stderr
    if total < LONG_LOG or not stream.isatty():
        return None

    def show(done: int) -> None:
        end = "\n" if done >= total else ""
        stream.write(f"\rreport: {100 * done // total:3d}% of {total:,} events{end}")
        stream.flush()

    return show


def _run(args: argparse.Namespace) -> int:
    from muster.report import build_report

    events = _events(args)
    show = progress_line(len(events))
    report = build_report(events, progress=show)
    if show is not None:
        show(len(events))
    plots = []
    if args.plots:
        from muster.report.plots import write_plots

        try:
            plots = write_plots(report, args.plots)
        except OSError as exc:
            fail(f"--plots {args.plots}: {exc}")
    if args.json:
        print_json({**report.to_builtins(), "plots": [str(p) for p in plots]})
        return 0
    from muster.report.text import report_lines

    for line in report_lines(report):
        print(line)
    if plots:
        print(f"plots: {', '.join(str(p) for p in plots)}")
    return 0
