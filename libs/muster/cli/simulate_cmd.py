"""``muster simulate FILE... [--json] [--check] [--skip-idle]``.

``--skip-idle`` runs every file as if its ``config.skip_idle`` were true: the
same decisions at the same clocks, the idle cycles between them not run.

Exit codes: 0 every run went through (and, with ``--check``, every
expectation held); 1 an expectation failed; 2 a file is not a valid
scenario (the message names the file and the field).
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from muster.scenario.expect import Failure

OK, FAILED, BAD_INPUT = 0, 1, 2


def register(sub: Any) -> None:
    """Add the ``simulate`` subcommand to an argparse subparsers object."""
    parser = sub.add_parser(
        "simulate",
        description="Run scenarios (spec/scenario-format.md) through the allocator and a simulated fleet.",
    )
    _arguments(parser)
    parser.set_defaults(run=_run)


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("files", nargs="+", metavar="FILE", help="scenario files (YAML or JSON)")
    parser.add_argument("--json", action="store_true", help="print the results as one JSON document")
    parser.add_argument("--check", action="store_true", help="assert each file's expect block")
    parser.add_argument(
        "--skip-idle",
        action="store_true",
        help="jump over cycles that would decide nothing (as config.skip_idle: true); same decisions",
    )


def _run(args: argparse.Namespace) -> int:
    from muster.scenario.errors import ScenarioError
    from muster.scenario.expect import check
    from muster.scenario.load import load_scenario
    from muster.simulate import simulate, to_json

    scenarios = []
    bad = False
    for path in args.files:
        try:
            scenarios.append((path, load_scenario(path)))
        except ScenarioError as exc:
            print(f"error: {exc}", file=sys.stderr)
            bad = True
    if bad:
        return BAD_INPUT
    results = []
    failed = False
    report = sys.stderr if args.json else sys.stdout
    for path, scenario in scenarios:
        result = simulate(scenario, skip_idle=True if args.skip_idle else None)
        results.append(result)
        if not args.json:
            print(format_table(result), file=sys.stdout)
        if args.check:
            failures = check(scenario.expect, result)
            failed = failed or bool(failures)
            print(_verdict(path, scenario.name, failures), file=report)
    if args.json:
        document = results[0] if len(results) == 1 else results
        sys.stdout.write(to_json(document).decode() + "\n")
    return FAILED if failed else OK


def _verdict(path: str, name: str, failures: list[Failure]) -> str:
    if not failures:
        return f"PASS {path} ({name})"
    lines = [f"FAIL {path} ({name})"]
    lines += [f"  {failure}" for failure in failures]
    return "\n".join(lines)


def format_table(result: Any) -> str:
    """A readable account of one run: jobs, evictions, queues."""
    ran = "" if result.cycles_run is None else f" ({result.cycles_run} run)"
    lines = [f"scenario {result.scenario}: {result.cycles} cycles{ran}, time {result.time:g}", ""]
    rows = [("JOB", "STATUS", "PODS", "REASON")]
    for name, job in result.jobs.items():
        pods = " ".join(f"{p.node}{p.gpus}" if p.gpus else p.node for p in job.pods) or "-"
        rows.append((name, job.status, pods, job.reason or ""))
    lines += _columns(rows)
    if result.evictions:
        lines += ["", "EVICTIONS"]
        for e in result.evictions:
            why = f" for {e.for_job}" if e.for_job else ""
            lines.append(f"  cycle {e.cycle}: {e.job} ({e.action}{why})")
    rows = [("QUEUE", "FAIR SHARE", "ALLOCATED")]
    for name, queue in result.queues.items():
        rows.append((name, _amounts(queue.fair_share), _amounts(queue.allocated)))
    lines += ["", *_columns(rows)]
    return "\n".join(lines) + "\n"


def _amounts(values: dict[str, float]) -> str:
    return " ".join(f"{k} {_number(k, v)}" for k, v in values.items()) or "-"


def _number(resource: str, value: float) -> str:
    if resource in ("memory", "gpu_memory") and value >= 2**30:
        return f"{value / 2**30:g}Gi"
    return f"{value:g}"


def _columns(rows: list[tuple[str, ...]]) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows]


def main(argv: list[str] | None = None) -> int:
    """Run the subcommand on its own (``python -m muster.cli.simulate_cmd``)."""
    parser = argparse.ArgumentParser(prog="muster simulate")
    _arguments(parser)
    return _run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
