"""``muster replay`` at work: re-derive decisions, or re-run history under other settings (what-if).

Imported only when the command runs, so that ``muster replay --help`` loads nothing heavy.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import msgspec
import yaml

from muster.cli.common import CHECK_FAILED, fail, print_json
from muster.cli.log_sources import read_log, read_replay_input, read_saved_log
from muster.cli.queues_cmd import read_queue_file
from muster.replay import LoggedMessage, replay, save_log
from muster.replay_window import Window
from muster.report.text import side_by_side
from muster.runtime.settings import NoRunningSystem
from muster.scheduler.config import AllocatorConfig
from muster.whatif import QueuesLeftOut, run_what_if, what_if_document

CATEGORY_WORDS = {
    "started_earlier": "start earlier",
    "started_later": "start later",
    "unchanged": "start at the same time",
    "no_longer_started": "no longer start",
    "started_only_after": "start only in the what-if",
    "started_in_neither": "start in neither run",
}
"""Each start category of muster.whatif in the words the report uses."""

LISTED = 20
"""Jobs named per category without --all."""


def _what_if(args: argparse.Namespace, log: list[LoggedMessage]) -> int:
    config = None
    if args.config:
        try:
            config = msgspec.convert(yaml.safe_load(Path(args.config).read_text()) or {}, AllocatorConfig)
        except (OSError, yaml.YAMLError, msgspec.ValidationError, ValueError) as exc:
            fail(f"{args.config}: {exc}")
    queues = read_queue_file(args.queues) if args.queues else None
    try:
        run = run_what_if(log, config=config, queues=queues, drop_queues=args.drop_queues)
    except QueuesLeftOut as exc:
        fail(
            f"{args.queues}: {exc}; their jobs could not run. "
            "Add them to the file, or pass --drop-queues to re-run history without them"
        )
    report = what_if_document(run)
    figures = run.reports() if args.report else None
    if args.json:
        if figures is not None:
            report["report"] = {"before": figures[0].to_builtins(), "after": figures[1].to_builtins()}
        print_json(report)
        return 0
    for line in what_if_lines(report, None if args.all else LISTED):
        print(line)
    if figures is not None:
        print()
        for line in side_by_side(*figures):
            print(line)
    return 0


def what_if_lines(report: dict, listed: int | None = LISTED) -> list[str]:
    """The what-if report as text: every job counted in a named category; the jobs of each category
    whose start changed named (``listed`` of each, None: all, the unchanged ones too)."""
    s = report["summary"]
    counts = ", ".join(f"{s[c]} {words}" for c, words in CATEGORY_WORDS.items())
    lines = [
        f"what-if over {report['window_seconds']:.0f}s of history, {s['jobs']} jobs: {counts}; "
        f"{s['placement_changed']} placed differently"
    ]
    if report.get("dropped_queues"):
        lines.append(f"queues dropped (--drop-queues): {', '.join(report['dropped_queues'])}")
    lines += _gpu_hours_table(report["queues"])
    for category, words in CATEGORY_WORDS.items():
        if category == "unchanged" and listed is not None:
            continue
        jobs = [(n, j) for n, j in report["jobs"].items() if j["category"] == category]
        if not jobs:
            continue
        jobs.sort(key=lambda x: (-abs(x[1]["start_delta"] or 0.0), x[0]))
        lines.append(f"{len(jobs)} {words}:")
        lines += [f"  {name}: {_job_line(job)}" for name, job in jobs[:listed]]
        if listed is not None and len(jobs) > listed:
            lines.append(f"  … {len(jobs) - listed} more (--all to list them)")
    return lines


def _gpu_hours_table(queues: dict) -> list[str]:
    width = max([len("queue"), *(len(name) for name in queues)])
    lines = [f"{'queue':<{width}} {'GPU-h before':>13} {'after':>10} {'change':>10} {'recorded':>10}"]
    for name, q in queues.items():
        lines.append(
            f"{name:<{width}} {q['gpu_hours_before']:>13.3f} {q['gpu_hours_after']:>10.3f} "
            f"{q['gpu_hours_delta']:>+10.3f} {q['gpu_hours_recorded']:>10.3f}"
        )
    return lines


def _job_line(job: dict) -> str:
    before, after = job["waited_before"], job["waited_after"]
    where = f"queue {job['queue']}"
    if before is None and after is None:
        return f"{where}, never starts"
    if after is None:
        return f"{where}, started after {before}s waiting; never starts in the what-if"
    if before is None:
        return f"{where}, never started; starts after {after}s waiting in the what-if"
    return f"{where}, starts {job['start_delta']:+.1f}s ({before}s -> {after}s waiting)"


def run(args: argparse.Namespace) -> int:
    """``muster replay`` with its parsed arguments; the exit code."""
    if args.drop_queues and not args.queues:
        fail("--drop-queues: only with --queues")
    if args.report and not (args.queues or args.config):
        fail("--report: only with --queues or --config (for a log's own figures: muster report)")
    whole = bool(args.save or args.config or args.queues)
    if args.log:
        log, subjects = read_saved_log(args.log)
        window = Window(log)
    else:
        try:
            if whole:
                log, subjects = read_log(args.source)
                window = Window(log)
            else:
                window, subjects = read_replay_input(args.source, args.from_seq, args.to_seq)
        except NoRunningSystem as exc:
            fail(str(exc), CHECK_FAILED)
    if args.save:
        save_log(window.messages, args.save)
    if args.config or args.queues:
        return _what_if(args, window.messages)
    report = replay(
        window.messages,
        subjects,
        from_seq=args.from_seq,
        to_seq=args.to_seq,
        starts=window.starts,
        check=window.check,
    )
    if args.json:
        print_json(report.to_builtins())
    else:
        print(
            f"replayed {report.cycles} cycles over {report.events} events "
            f"({report.events_per_second:,.0f} events/s): {report.divergences} divergences"
        )
        for pool, seq in sorted(report.started_from.items()):
            print(f"pool {pool}: started from its snapshot at sequence {seq}")
        if report.unchecked:
            print(
                f"{report.unchecked} cycles precede what the stream still holds: "
                "replay them from the archive with --source postgres"
            )
        if report.snapshots_checked:
            print(
                f"snapshots: {report.snapshots_checked} checked against the log, "
                f"{len(report.snapshot_mismatches)} do not match"
            )
        for key in report.snapshot_mismatches:
            print(f"  snapshot {key}: its state is not what the log gives")
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
    return CHECK_FAILED if report.divergences or report.snapshot_mismatches else 0
