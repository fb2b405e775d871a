"""Compile the allocator's Numba kernels ahead of time (``python -m muster.warmup [SCENARIO...]``).

Kernels are cached on disk (``cache=True``) on first use; a cold first use
costs tens of seconds, which a freshly started allocator would otherwise
spend before its first decision. Running scenarios through the real
allocator once — the demo workload, and any scenario files given — fills
the cache for every process that comes after.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from muster.demo import demo_scenario
from muster.scenario import load_scenario, parse_scenario
from muster.scheduler.config import AllocatorConfig
from muster.simulate import Simulation


def warm_kernels(config: AllocatorConfig) -> None:
    """Run the demo workload through a private allocator with this configuration: its kernels are then
    compiled (or loaded from the disk cache) before an allocator instance can lead, so a standby's
    first cycle after taking over does not pay for them. Touches no bus and no shared state."""
    Simulation(parse_scenario(demo_scenario(nodes=4, jobs=40)), config=config).run()


def warm(paths: list[Path]) -> int:
    """Run the demo and each scenario once; returns how many ran."""
    scenarios = [parse_scenario(demo_scenario(nodes=4, jobs=40))] + [load_scenario(p) for p in paths]
    for scenario in scenarios:
        Simulation(scenario).run()
    return len(scenarios)


if __name__ == "__main__":
    started = time.perf_counter()
    n = warm([Path(p) for p in sys.argv[1:]])
    print(f"allocator kernels compiled and cached ({n} scenarios, {time.perf_counter() - started:.1f}s)")
