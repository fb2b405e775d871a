"""What the fault suite does to a running system, and when: a plan drawn from a seed.

The plan is data, made before the run: each service is killed (SIGKILL)
once and restarted after a short while, the NATS server is restarted once
(or as often as asked) and Postgres is stopped once for ``pg_outage`` seconds, in an order and at
times a seeded generator chooses. Faults run one after another; one that
falls due while the previous is still in progress waits for it.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

KILL = "kill"
NATS_RESTART = "nats"
PG_OUTAGE = "postgres"
KINDS = (KILL, NATS_RESTART, PG_OUTAGE)


@dataclass(frozen=True)
class Fault:
    at: float
    """Seconds after the run starts."""
    kind: str
    """kill | nats | postgres"""
    target: str
    """The service killed ('' for the servers)."""
    down: float
    """Seconds between stopping it and starting it again."""

    def describe(self) -> str:
        what = {KILL: f"SIGKILL {self.target}", NATS_RESTART: "restart NATS", PG_OUTAGE: "stop Postgres"}
        return f"t+{self.at:5.1f}s {what[self.kind]}, back after {self.down:.1f}s"


def plan_faults(
    seed: int,
    services: tuple[str, ...],
    *,
    window: float,
    pg_outage: float,
    kills_per_service: int = 1,
    nats_restarts: int = 1,
    kinds: tuple[str, ...] = KINDS,
) -> list[Fault]:
    """Every fault of one run, in time order, spread over ``window`` seconds; only ``kinds`` of faults.

    ``nats_restarts``: how many times the NATS server is restarted (each message in flight at a
    restart is a chance to lose a delivery, an acknowledgement or a reply)."""
    if window <= 0:
        raise ValueError(f"window: must be positive, got {window}")
    unknown = sorted(set(kinds) - set(KINDS))
    if unknown:
        raise ValueError(f"kinds: unknown fault kinds {unknown}; known: {list(KINDS)}")
    rng = random.Random(seed)
    faults = [(KILL, name) for name in services for _ in range(kills_per_service)] if KILL in kinds else []
    faults += [(NATS_RESTART, "")] * nats_restarts if NATS_RESTART in kinds else []
    faults += [(PG_OUTAGE, "")] if PG_OUTAGE in kinds else []
    if not faults:
        return []
    rng.shuffle(faults)
    slot = window / len(faults)
    out = []
    for i, (kind, target) in enumerate(faults):
        at = round(i * slot + rng.uniform(0.1, 0.6) * slot, 2)
        down = pg_outage if kind == PG_OUTAGE else round(rng.uniform(0.2, 2.0), 2)
        out.append(Fault(at=at, kind=kind, target=target, down=down))
    return out
