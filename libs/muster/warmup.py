"""Compile the allocator's Numba kernels ahead of time (``python -m muster.warmup [SCENARIO...]``).

Kernels are cached on disk (``cache=True``) on first use; a cold first use
costs tens of seconds, which a freshly started allocator would otherwise
spend before its first decision. Running scenarios through the real
allocator once — the demo workload, and any scenario files given — fills
the cache for every process that comes after. While it runs, it says on
stderr which scenario it is at and which kernel it compiles, so a first
install is never a silent minute.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

from numba.core import event

from muster.demo import demo_scenario
from muster.scenario import load_scenario, parse_scenario
from muster.scheduler.config import AllocatorConfig


def warm_kernels(config: AllocatorConfig) -> None:
    """Run the demo workload through a private allocator with this configuration: its kernels are then
    compiled (or loaded from the disk cache) before an allocator instance can lead, so a standby's
    first cycle after taking over does not pay for them. Touches no bus and no shared state."""
    from muster.simulate import Simulation

    Simulation(parse_scenario(demo_scenario(nodes=4, jobs=40)), config=config).run()


class CompileReport(event.Listener):
    """Says which kernel Numba starts compiling, and when each outermost compile is done."""

    def __init__(self, say: Callable[[str], None], clock: Callable[[], float] = time.perf_counter):
        self.say = say
        self.clock = clock
        self.started = clock()
        self.depth = 0
        self.compiled = 0
        """Outermost compiles finished (a kernel's callees compile inside it)."""
        self.at = "loading"
        """What is being run when a compile starts (``3/100 some.yaml``)."""

    def on_start(self, ev: event.Event) -> None:
        if self.depth == 0:
            self.began = self.clock()
            self.say(f"[{self.clock() - self.started:5.0f}s] {self.at}: compiling {_name(ev)} ...")
        self.depth += 1

    def on_end(self, ev: event.Event) -> None:
        self.depth -= 1
        if self.depth == 0:
            self.compiled += 1
            self.say(
                f"[{self.clock() - self.started:5.0f}s]   {_name(ev)} took {self.clock() - self.began:.0f}s"
            )


def _name(ev: event.Event) -> str:
    function = ev.data["dispatcher"].py_func
    return f"{function.__module__}.{function.__qualname__}"


def warm(paths: list[Path], say: Callable[[str], None] = lambda line: None) -> int:
    """Run the demo and each scenario once, telling ``say`` how far along it is; returns how many ran."""
    named = [("the demo", lambda: parse_scenario(demo_scenario(nodes=4, jobs=40)))]
    named += [(p.name, lambda p=p: load_scenario(p)) for p in paths]
    report = CompileReport(say)
    with event.install_listener("numba:compile", report):
        # Imported here: some kernels compile eagerly as their modules load, and those count too.
        from muster.simulate import Simulation

        for i, (name, scenario) in enumerate(named, 1):
            report.at = f"{i}/{len(named)} {name}"
            Simulation(scenario()).run()
            if i % HEARTBEAT == 0 and i < len(named):
                say(f"[{report.clock() - report.started:5.0f}s] {i}/{len(named)} scenarios run")
    return len(named)


HEARTBEAT = 10
"""Scenarios between two progress lines when nothing compiles."""


def _printer(stream: TextIO) -> Callable[[str], None]:
    def say(line: str) -> None:
        print(line, file=stream, flush=True)

    return say


if __name__ == "__main__":
    started = time.perf_counter()
    n = warm([Path(p) for p in sys.argv[1:]], _printer(sys.stderr))
    print(f"allocator kernels compiled and cached ({n} scenarios, {time.perf_counter() - started:.1f}s)")
