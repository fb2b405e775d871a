"""``muster bench``: the benchmark suite; ``muster bench openb`` (spec/cli.md).

``muster bench`` alone runs every registered benchmark with a progress
display, prints one table, writes the JSON under ``--out`` and plots the
openb curves (PNG, when matplotlib is installed). ``--quick`` is a small
smoke run: one seed on a subsample of the default trace.

Sub-benchmarks live in ``RUNNERS``; each takes the parsed arguments and
returns a list of result rows (dicts), so others can add ``e2e`` the same way.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from muster.cli.common import BAD_INPUT, OK, fail, print_json
from muster.cli.parsing import LazySubParsers

QUICK_SUBSAMPLE = 0.25
QUICK_SEEDS = 1
PLOT_FROM, PLOT_TO = 75, 130


def _policy_names() -> list[str]:
    from muster.kernels.policy_registry import POLICIES

    return list(POLICIES)


def _default_policy() -> str:
    from muster.kernels.policy_registry import DEFAULT_POLICY

    return DEFAULT_POLICY


# ------------------------------------------------------------------ openb


def _run_openb_one(args: argparse.Namespace) -> dict:
    from muster.bench.openb import run_openb

    seeds = min(args.seeds, QUICK_SEEDS) if args.quick else args.seeds
    try:
        return run_openb(
            args.nodes,
            args.pods,
            seeds,
            args.policy,
            subsample=QUICK_SUBSAMPLE if args.quick else None,
        )
    except ValueError as exc:
        fail(str(exc), BAD_INPUT)


def _openb_cmd(args: argparse.Namespace) -> int:
    if args.seeds < 1:
        fail("--seeds: must be at least 1")
    doc = _run_openb_one(args)
    if args.json:
        print_json(doc)
    else:
        _print_openb_table([doc])
    return OK


def _openb_suite(args: argparse.Namespace, progress: Callable[[str], None]) -> list[dict]:
    """Every policy on every trace in the data folder (quick: the default trace, subsampled)."""
    from muster.bench.openb import DEFAULT_PODS, csv_dir, run_openb

    folder = csv_dir()
    if not folder.is_dir():
        progress(f"openb: skipped, no data folder at {folder}")
        return []
    traces = [DEFAULT_PODS] if args.quick else sorted(p.name for p in folder.glob("openb_pod_list_*.csv"))
    if args.traces:
        traces = [t for t in traces if any(sel in t for sel in args.traces)]
    seeds = QUICK_SEEDS if args.quick else args.seeds
    rows = []
    for trace in traces:
        for policy in _policy_names():
            progress(f"openb {trace} {policy}")
            t0 = time.perf_counter()
            doc = run_openb(
                None,
                folder / trace,
                seeds,
                policy,
                subsample=QUICK_SUBSAMPLE if args.quick else None,
            )
            doc["wall_seconds"] = round(time.perf_counter() - t0, 2)
            doc["benchmark"] = "openb"
            rows.append(doc)
    return rows


def _allocator_suite(args: argparse.Namespace, progress: Callable[[str], None]) -> list[dict]:
    from muster.bench import allocator

    progress("allocator")
    rows = allocator.run(bool(args.quick))
    for r in rows:
        r.setdefault("benchmark", "allocator")
    return rows


def _allocator_cmd(args: argparse.Namespace) -> int:
    rows = _allocator_suite(args, lambda _msg: None)
    if args.json:
        print_json(rows)
    else:
        _print_rows("allocator", rows)
    return OK


# ------------------------------------------------------------------ live path


def _e2e_suite(args: argparse.Namespace, progress: Callable[[str], None]) -> list[dict]:
    """The live path at the spec's scale (quick: 1k nodes, 10k pods), and latency at 1,000 pods/s offered."""
    from muster.bench.e2e import run_e2e

    sizes = [(1000, 10_000)] if args.quick else [(1000, 10_000), (10_000, 100_000)]
    rows = []
    for nodes, pods in sizes:
        progress(f"e2e {nodes} nodes, {pods} pods")
        rows.append({"benchmark": "e2e", **run_e2e(nodes, pods)})
    progress("e2e latency at 1,000 pods/s")
    rows.append({"benchmark": "e2e", **run_e2e(1000, 2_000 if args.quick else 10_000, rate=1000.0)})
    return rows


def _e2e_cmd(args: argparse.Namespace) -> int:
    from muster.bench.e2e import run_e2e

    if args.nodes < 1 or args.pods < 1:
        fail("--nodes and --pods: must be at least 1")
    if args.rate is not None and args.rate <= 0:
        fail("--rate: must be positive")
    doc = run_e2e(args.nodes, args.pods, rate=args.rate)
    if args.json:
        print_json(doc)
    else:
        _print_fields("e2e", doc)
    return OK


def _replay_suite(args: argparse.Namespace, progress: Callable[[str], None]) -> list[dict]:
    from muster.bench import replay

    progress("replay")
    return [{"benchmark": "replay", **row} for row in replay.run(bool(args.quick))]


def _failover_suite(args: argparse.Namespace, progress: Callable[[str], None]) -> list[dict]:
    """Kill a pool's leader with work waiting, under the default lease."""
    from muster.bench.e2e import FAILOVER_TTL, run_failover

    nodes, pods = (200, 2_000) if args.quick else (10_000, 100_000)
    progress(f"failover at {nodes} nodes, {pods} pods, lease ttl {FAILOVER_TTL:g} s")
    return [{"benchmark": "failover", **run_failover(nodes, pods)}]


def _history_suite(args: argparse.Namespace, progress: Callable[[str], None]) -> list[dict]:
    """Issue #17 (b): a long paced history written into a stream, replayed in full, against its live span."""
    from muster.bench import history

    events = history.QUICK_EVENTS if args.quick else history.FULL_EVENTS
    progress(f"history: {events} events into a stream, replayed")
    return [{"benchmark": "history", **row} for row in history.run(bool(args.quick))]


def _restart_suite(args: argparse.Namespace, progress: Callable[[str], None]) -> list[dict]:
    """Issue #17: a cold restart and a window replay at several history lengths, flat in length."""
    from muster.bench import restart

    sizes = restart.QUICK_SIZES if args.quick else restart.FULL_SIZES
    progress(f"restart and window replay at {', '.join(str(s) for s in sizes)} events of history")
    return [{"benchmark": "restart", **row} for row in restart.run(bool(args.quick))]


def _cli_suite(args: argparse.Namespace, progress: Callable[[str], None]) -> list[dict]:
    """Issue #27: wall time of fresh `muster` processes, alone and against a small system."""
    from muster.bench import cli

    return [{"benchmark": "cli", **row} for row in cli.run(bool(args.quick), progress)]


def _cli_cmd(args: argparse.Namespace) -> int:
    from muster.bench import cli

    if args.runs < 1:
        fail("--runs: must be at least 1")
    rows = cli.run(runs=args.runs)
    path = _written(args, "cli", rows)
    if args.json:
        print_json(rows)
    else:
        _print_cli_table(rows)
        print(f"results: {path}")
    return OK


def _philly_speed_suite(args: argparse.Namespace, progress: Callable[[str], None]) -> list[dict]:
    """Issue #26: the Philly trace simulated stepping every cycle and skipping idle time."""
    from muster.bench import philly

    return [{"benchmark": "philly-speed", **row} for row in philly.run(bool(args.quick), progress)]


def _philly_suite(args: argparse.Namespace, progress: Callable[[str], None]) -> list[dict]:
    """Issue #26: four sharing policies on the Philly trace at three loads (quick: Pollux's 160-job sample)."""
    from muster.bench import philly_outcomes
    from muster.bench.philly_trace import TraceError

    try:
        workload = philly_outcomes.philly_workload(quick=bool(args.quick))
    except TraceError as exc:
        progress(f"philly: skipped, {exc}")
        return []
    return [{"benchmark": "philly", **o.row} for o in philly_outcomes.run(workload, progress=progress)]


def _philly_jobs(value: str | None, default: int) -> int | None:
    """``--jobs``: a number of jobs, or None for all of them."""
    if value is None or value == "all":
        return default if value is None else None
    if not value.isdigit() or int(value) < 1:
        fail(f"--jobs: {value!r}: a number of jobs (at least 1) or 'all'")
    return int(value)


def _philly_cmd(args: argparse.Namespace) -> int:
    if args.speed:
        return _philly_speed_cmd(args)
    from muster.bench import philly_outcomes, philly_plots, philly_tables
    from muster.bench.philly_trace import DATA, DEFAULT_JOBS, TraceError

    if args.quick and args.jobs is not None:
        fail("--jobs: not with --quick (the quick run is Pollux's 160-job sample)")
    jobs = _philly_jobs(args.jobs, DEFAULT_JOBS)
    try:
        workload = philly_outcomes.philly_workload(Path(args.data or DATA), jobs, bool(args.quick))
    except TraceError as exc:
        fail(f"--data: {exc}", BAD_INPUT)
    outcomes = _with_progress(lambda progress: philly_outcomes.run(workload, progress=progress))
    rows = [o.row for o in outcomes]
    stem = "quick" if args.quick else "all" if jobs is None else str(jobs)
    path = _written(args, f"philly-{stem}", rows)
    pngs = philly_plots.write_plots(outcomes, path.parent, stem)
    if args.json:
        print_json(rows)
        return OK
    for line in philly_tables.load_tables(
        rows, f"philly: {len(workload.jobs):,} jobs on {workload.gpus:,} GPUs"
    ):
        print(line)
    print(f"results: {path}")
    for p in pngs:
        print(f"plot: {p}")
    return OK


def _with_progress(work: Callable[[Callable[[str], None]], list]) -> list:
    """``work(progress)``, its progress shown on stderr when that is a terminal."""
    if not sys.stderr.isatty():
        return work(lambda _msg: None)
    from rich.console import Console
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    with Progress(
        SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(), console=Console(stderr=True)
    ) as bar:
        task = bar.add_task("philly", total=None)
        return work(lambda msg: bar.update(task, description=msg))


def _philly_speed_cmd(args: argparse.Namespace) -> int:
    if args.jobs is not None or args.data is not None:
        fail("--jobs and --data: not with --speed (it times its own sizes of the shared trace)")
    return _report(args, "philly --speed", "philly-speed", _philly_speed_suite(args, lambda _msg: None))


def _simulator_suite(args: argparse.Namespace, progress: Callable[[str], None]) -> list[dict]:
    """Issue #26's target: the simulator over the whole Philly trace from 2017-10-01 on 2,816 GPUs."""
    from muster.bench import simulator

    return [{"benchmark": "simulator", **row} for row in simulator.run(bool(args.quick), progress)]


def _simulator_cmd(args: argparse.Namespace) -> int:
    return _report(args, "simulator", "simulator", _simulator_suite(args, lambda _msg: None))


def _written(args: argparse.Namespace, stem: str, results: object) -> Path:
    """``results`` as JSON in ``--out``, as ``bench-<stem>.json``; the file's path."""
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"bench-{stem}.json"
    path.write_text(json.dumps(results, indent=2) + "\n")
    return path


def _report(args: argparse.Namespace, title: str, stem: str, rows: list[dict]) -> int:
    """Rows of one timing benchmark written (``-quick`` named so with ``--quick``) and shown."""
    path = _written(args, f"{stem}{'-quick' if args.quick else ''}", rows)
    if args.json:
        print_json(rows)
    else:
        _print_rows(title, rows)
        print(f"results: {path}")
    return OK


# name -> runner for the whole suite; each returns rows of results
RUNNERS: dict[str, Callable[[argparse.Namespace, Callable[[str], None]], list[dict]]] = {
    "openb": _openb_suite,
    "allocator": _allocator_suite,
    "replay": _replay_suite,
    "e2e": _e2e_suite,
    "failover": _failover_suite,
    "history": _history_suite,
    "restart": _restart_suite,
    "cli": _cli_suite,
    "philly": _philly_suite,
    "philly-speed": _philly_speed_suite,
    "simulator": _simulator_suite,
}


# ------------------------------------------------------------------ suite


def _suite_cmd(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    console = Console(stderr=True)
    results: dict[str, list[dict]] = {}
    with Progress(
        SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(), console=console
    ) as bar:
        task = bar.add_task("bench", total=None)
        for name, runner in RUNNERS.items():
            results[name] = runner(args, lambda msg: bar.update(task, description=msg))
    stem = "quick" if args.quick else "full"
    path = _written(args, stem, results)
    pngs = plot_openb(results.get("openb", []), path.parent, stem)
    if args.json:
        print_json(results)
    else:
        for name, rows in results.items():
            if name == "openb":
                _print_openb_table(rows)
            elif name == "cli":
                _print_cli_table(rows)
            else:
                _print_rows(name, rows)
        print(f"results: {path}")
        for p in pngs:
            print(f"plot: {p}")
        if not pngs and results.get("openb"):
            print("plots skipped: matplotlib is not installed (pip install 'muster[bench]')")
    return OK


def plot_openb(rows: list[dict], out: Path, stem: str) -> list[Path]:
    """One PNG per trace: unallocated GPU % against arrived GPU %, a line per policy."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return []
    by_trace: dict[str, list[dict]] = {}
    for r in rows:
        by_trace.setdefault(r["trace"], []).append(r)
    paths = []
    for trace, docs in sorted(by_trace.items()):
        fig, ax = plt.subplots(figsize=(7, 4.5))
        for d in docs:
            pts = sorted((int(k), v) for k, v in d["unallocated_gpu_pct_by_arrived_pct"].items())
            pts = [(k, v) for k, v in pts if PLOT_FROM <= k <= PLOT_TO]
            if pts:
                ax.plot(*zip(*pts, strict=True), label=d["policy"])
        ref = next((d.get("published") for d in docs if d["policy"] == "fgd" and d.get("published")), None)
        if ref:
            pts = sorted((int(k), v["mean"]) for k, v in ref["by_arrived_pct"].items())
            pts = [(k, v) for k, v in pts if PLOT_FROM <= k <= PLOT_TO]
            ax.plot(*zip(*pts, strict=True), "k--", label="FGD (published)")
        ax.set_xlabel("arrived GPU request, % of cluster GPUs")
        ax.set_ylabel("unallocated GPU, % of cluster")
        ax.set_title(f"{trace} (mean over {docs[0]['seeds']} seeds)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
        path = out / f"openb-{stem}-{Path(trace).stem}.png"
        fig.tight_layout()
        fig.savefig(path, dpi=110)
        plt.close(fig)
        paths.append(path)
    return paths


# ------------------------------------------------------------------ output


def _print_openb_table(rows: list[dict]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title="openb: unallocated GPU % at 100 % arrived (lower is better)")
    for col in ("trace", "policy", "seeds", "mean", "sd", "published", "pods/s", "s/run"):
        table.add_column(col, justify="left" if col in ("trace", "policy") else "right")
    for r in rows:
        u = r["unallocated_gpu_pct_at_arrived_100"]
        pub = (r.get("published") or {}).get("at_arrived_100")
        table.add_row(
            r["trace"].removeprefix("openb_pod_list_").removesuffix(".csv"),
            r["policy"],
            str(r["seeds"]),
            f"{u['mean']:.2f}",
            f"{u['sd']:.2f}",
            f"{pub['mean']:.2f}" if pub else "",
            f"{r['pods_per_second']:.0f}",
            f"{r['seconds_per_run']:.2f}",
        )
    Console().print(table)


def _print_cli_table(rows: list[dict]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title="cli: wall time of fresh `muster` processes (median)")
    for col in ("call", "ms", "target", "met", "min-max ms"):
        table.add_column(col, justify="left" if col == "call" else "right", overflow="fold")
    for r in rows:
        met = "[green]yes[/]" if r["met"] else "[red]no[/]"
        table.add_row(
            r["name"], f"{r['value']:.0f}", f"{r['target']:.0f}", met, f"{r['min_ms']:.0f}-{r['max_ms']:.0f}"
        )
    Console().print(table)


def _print_rows(name: str, rows: list[dict]) -> None:
    from rich.console import Console
    from rich.table import Table

    if not rows:
        return
    cols = list(dict.fromkeys(k for r in rows for k in r))
    table = Table(title=name)
    for c in cols:
        table.add_column(c)
    for r in rows:
        table.add_row(*(str(r.get(c, "")) for c in cols))
    Console().print(table)


def _print_fields(name: str, doc: dict) -> None:
    """One result as a field / value table; nested values (latency, CPU per process) as dotted fields."""
    from rich.console import Console
    from rich.table import Table

    table = Table(title=name)
    table.add_column("field")
    table.add_column("value", justify="right")
    for field, value in _flat(doc):
        table.add_row(field, str(value))
    Console().print(table)


def _flat(doc: dict, prefix: str = "") -> list[tuple[str, object]]:
    out: list[tuple[str, object]] = []
    for key, value in doc.items():
        if isinstance(value, dict):
            out += _flat(value, f"{prefix}{key}.")
        else:
            out.append((f"{prefix}{key}", value))
    return out


# ------------------------------------------------------------------ wiring


def register(sub: Any) -> None:
    """Add ``bench`` and its sub-benchmarks to an argparse subparsers object."""
    from muster.bench import cli as cli_bench
    from muster.bench.philly_trace import DEFAULT_JOBS

    parser = sub.add_parser("bench", description=__doc__.split("\n\n")[1])
    _suite_arguments(parser)
    parser.set_defaults(run=_suite_cmd)
    benches = parser.add_subparsers(dest="bench", metavar="BENCHMARK", action=LazySubParsers)
    # The policies' names come from their kernels' module: loaded only when openb itself is asked for.
    benches.add_lazy(
        "openb", "the FGD paper's placement protocol on the Alibaba openb trace", _register_openb
    )

    alloc = benches.add_parser("allocator", help="allocator cycle speed")
    alloc.add_argument("--json", action="store_true", help="print one JSON document")
    alloc.add_argument("--quick", action="store_true", help="smoke run")
    alloc.set_defaults(run=_allocator_cmd)

    philly = benches.add_parser(
        "philly",
        help="four sharing policies on the Philly trace at three loads",
        description="Strict quotas, borrowing without reclaim, the default (KAI's actions) and the default "
        "with time-based fair share, each at loads x1, x4 and x8, on the Philly trace's jobs from 2017-10-01 "
        "(queues: its virtual clusters, quotas from their sizes). See docs/bench-philly.md.",
    )
    philly.add_argument(
        "--jobs",
        metavar="N|all",
        help=f"the first N jobs from 2017-10-01, or all of them (default {DEFAULT_JOBS:,})",
    )
    philly.add_argument("--quick", action="store_true", help="smoke run: Pollux's 160-job sample on 64 GPUs")
    philly.add_argument(
        "--speed",
        action="store_true",
        help="instead: time the simulator stepping every cycle and skipping idle time",
    )
    philly.add_argument(
        "--data", default=None, metavar="DIR", help="the data folder (default: the shared Philly data)"
    )
    philly.add_argument("--json", action="store_true", help="print the rows as one JSON document")
    philly.add_argument(
        "--out", default="bench/results", help="folder for the JSON and plots (default bench/results)"
    )
    philly.set_defaults(run=_philly_cmd)

    simulator = benches.add_parser(
        "simulator", help="the simulator over the whole Philly trace from 2017-10-01 on 2,816 GPUs, timed"
    )
    simulator.add_argument("--json", action="store_true", help="print one JSON document")
    simulator.add_argument("--quick", action="store_true", help="smoke run: the first 1000 jobs")
    simulator.add_argument(
        "--out", default="bench/results", help="folder for the JSON (default bench/results)"
    )
    simulator.set_defaults(run=_simulator_cmd)

    e2e = benches.add_parser(
        "e2e",
        help="the whole live path: binds/s and submit-to-bound latency",
        description="Real NATS and Postgres (embedded unless configured), every service, a simulated fleet.",
    )
    e2e.add_argument("--nodes", type=int, default=1000, help="simulated nodes (default 1000)")
    e2e.add_argument("--pods", type=int, default=10_000, help="single-GPU pods to bind (default 10000)")
    e2e.add_argument("--rate", type=float, default=None, help="offer pods at this many per second")
    e2e.add_argument("--json", action="store_true", help="print one JSON document")
    e2e.set_defaults(run=_e2e_cmd)

    cli = benches.add_parser(
        "cli",
        help="how long `muster` calls take: fresh processes, alone and against a small system",
        description="Wall time (median of fresh processes) of --help, --version, group, the completion script, "
        "and of status and why against a small system of its own.",
    )
    cli.add_argument(
        "--runs", type=int, default=cli_bench.RUNS, help=f"timed runs of each call (default {cli_bench.RUNS})"
    )
    cli.add_argument("--out", default="bench/results", help="folder for the JSON (default bench/results)")
    cli.add_argument("--json", action="store_true", help="print one JSON document")
    cli.set_defaults(run=_cli_cmd)


def _register_openb(benches: argparse._SubParsersAction) -> None:
    openb = benches.add_parser(
        "openb",
        description="Unallocated GPU % at 100 % arrived on the openb trace, mean and SD over seeds.",
    )
    openb.add_argument(
        "--nodes", metavar="NODES.csv", help="node list (default: the paper's 1,213 GPU nodes)"
    )
    openb.add_argument("--pods", metavar="PODS.csv", help="pod list (default: openb_pod_list_default.csv)")
    openb.add_argument("--seeds", type=int, default=10, help="number of seeds, 42 upwards (default 10)")
    openb.add_argument(
        "--policy",
        choices=_policy_names(),
        default=_default_policy(),
        help=f"placement policy (default {_default_policy()})",
    )
    openb.add_argument("--json", action="store_true", help="print one JSON document")
    openb.add_argument(
        "--quick", action="store_true", help="smoke run: one seed, a quarter of nodes and pods"
    )
    openb.set_defaults(run=_openb_cmd)


def _suite_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--quick", action="store_true", help="small smoke run of every benchmark")
    parser.add_argument("--seeds", type=int, default=10, help="openb seeds (default 10)")
    parser.add_argument(
        "--traces", nargs="*", metavar="PART", help="only openb traces whose name contains PART"
    )
    parser.add_argument(
        "--out", default="bench/results", help="folder for JSON and PNG (default bench/results)"
    )
    parser.add_argument("--json", action="store_true", help="print all results as one JSON document")


def main(argv: list[str] | None = None) -> int:
    """``python -m muster.cli.bench_cmd ...``: the bench command on its own."""
    from muster.cli.common import CliError

    parser = argparse.ArgumentParser(prog="muster")
    register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["bench", *(sys.argv[1:] if argv is None else argv)])
    try:
        return int(args.run(args) or 0)
    except CliError as exc:
        print(f"muster bench: {exc}", file=sys.stderr)
        return exc.code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
