"""What a demo showed, told at its end: peak use, evictions by kind, the busiest queue, where to look next.

Pure: the demo feeds it the states it polled and what the archive says about
evictions, and prints the lines it returns.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class DemoTally:
    """Peak GPUs in use and each leaf queue's GPU-seconds, from the states the demo polled."""

    peak_gpus: float = 0.0
    total_gpus: float = 0.0
    gpu_seconds: dict[str, float] = field(default_factory=dict)
    last_seen: float | None = None

    def observe(self, state: dict, elapsed: float) -> None:
        """Take one polled state (``muster.store.queries.status``), seen ``elapsed`` seconds in."""
        total = sum(n["total"]["gpu"] for n in state["nodes"].values())
        used = total - sum(n["free"]["gpu"] for n in state["nodes"].values())
        self.total_gpus = max(self.total_gpus, total)
        self.peak_gpus = max(self.peak_gpus, used)
        if self.last_seen is not None:
            # A parent's allocation is its children's: only leaves run jobs of their own.
            parents = {q.get("parent") for q in state["queues"].values()}
            for name, queue in state["queues"].items():
                if name not in parents:
                    gpus = queue["allocated"].get("gpu", 0.0)
                    self.gpu_seconds[name] = self.gpu_seconds.get(name, 0.0) + gpus * (
                        elapsed - self.last_seen
                    )
        self.last_seen = elapsed

    def busiest(self) -> tuple[str, float] | None:
        """The leaf queue that used the most GPU-hours, and how many; None if none used any."""
        used = [(seconds, name) for name, seconds in self.gpu_seconds.items() if seconds > 0]
        if not used:
            return None
        seconds, name = max(used)
        return name, seconds / 3600


def _evictions_line(evictions: dict[str, dict[str, int]]) -> str:
    if not evictions:
        return "evictions: none (every job fitted in its turn)"
    parts = [f"{action} {e['pods']} pods of {e['jobs']} jobs" for action, e in sorted(evictions.items())]
    return "evictions: " + ", ".join(parts)


def why_commands(home: Path, jobs: list[str]) -> list[str]:
    """``muster why`` lines a user can paste to ask about ``jobs`` of the demo's system."""
    return [f"MUSTER_HOME={shlex.quote(str(home))} muster why {shlex.quote(job)}" for job in jobs]


def story_lines(
    tally: DemoTally,
    evictions: dict[str, dict[str, int]],
    examples: list[str],
    *,
    home: Path,
    dashboard: str | None,
    kept: bool,
) -> list[str]:
    """The demo's closing lines: what happened, then where to look while the system is up."""
    lines = [f"peak GPUs in use: {tally.peak_gpus:g} of {tally.total_gpus:g}", _evictions_line(evictions)]
    busiest = tally.busiest()
    if busiest is not None:
        lines.append(f"busiest queue: {busiest[0]} ({busiest[1]:.2f} GPU-hours)")
    if not kept:
        lines.append(
            f"the demo's system has stopped; its logs are in {home / 'logs'} (`muster demo --keep` keeps it up)"
        )
        return lines
    if dashboard:
        lines.append(f"dashboard: {dashboard}")
    if examples:
        lines.append("ask why a job waited or was evicted:")
        lines += [f"  {command}" for command in why_commands(home, examples)]
    lines.append("muster is still up for you to look around; Ctrl-C stops it.")
    return lines


def example_jobs(state: dict, first_eviction: tuple[str, str | None] | None) -> list[str]:
    """Two jobs worth asking ``muster why`` about: the first one evicted and the one it made room for,
    else the two that are still waiting or, failing that, the first two jobs."""
    if first_eviction is not None:
        job, for_job = first_eviction
        return [job] + ([for_job] if for_job and for_job != job else [])
    waiting = [name for name, job in state["jobs"].items() if job["status"] in ("pending", "preempted")]
    return (waiting or list(state["jobs"]))[:2]
