"""Composition root of the allocator service: config from the environment, then run."""

from __future__ import annotations

import asyncio
import os
import socket
import time
from pathlib import Path

import msgspec
import yaml
from muster.lease import Lease, lease_bucket
from muster.service import ServiceContext, rebuild_then_consume
from muster.subjects import Subjects

from services.allocator.config import AllocatorConfig
from services.allocator.engine import Allocator
from services.allocator.handlers import AllocatorHandlers


def consumed_subjects(subjects: Subjects, pool: str) -> list[str]:
    """What an allocator of ``pool`` reads; replay folds exactly these."""
    return [
        subjects.nodes(pool),
        subjects.queues,
        subjects.podgroups,
        subjects.decisions(pool),
        subjects.pods(pool),
    ]


def load_config(env: dict[str, str]) -> AllocatorConfig:
    """``MUSTER_ALLOCATOR_CONFIG`` names a YAML file of AllocatorConfig fields; default config otherwise."""
    path = env.get("MUSTER_ALLOCATOR_CONFIG")
    if not path:
        return AllocatorConfig()
    data = yaml.safe_load(Path(path).read_text()) or {}
    return msgspec.convert(data, AllocatorConfig)


async def run(ctx: ServiceContext) -> None:
    env = dict(os.environ)
    config = load_config(env)
    pool = env.get("MUSTER_POOL", "default")
    instance = env.get("MUSTER_INSTANCE") or f"{socket.gethostname()}-{os.getpid()}"
    interval = float(env.get("MUSTER_CYCLE_INTERVAL", "0.05"))
    ttl = float(env.get("MUSTER_LEASE_TTL", "5"))
    engine = Allocator(config, frozenset({pool}))
    handlers = AllocatorHandlers(
        ctx.bus, ctx.subjects, engine, clock=time.time, pool=pool, metrics=ctx.metrics
    )
    lease = Lease(await lease_bucket(ctx.bus.js, ctx.subjects.stream), pool, instance, ttl)
    rebuilt = asyncio.Event()

    async def on_rebuilt() -> None:
        rebuilt.set()

    # Every instance, leader or standby, folds the whole log: a standby's state is warm when it takes over.
    consumer = asyncio.create_task(
        rebuild_then_consume(
            # Leader and standbys dead-letter under one name, so a bad message is lettered once.
            ctx,
            f"allocator-{pool}",
            consumed_subjects(ctx.subjects, pool),
            handlers.handle,
            on_rebuilt=on_rebuilt,
        )
    )
    next_lease_check = 0.0
    try:
        while not ctx.stop.is_set() and not consumer.done():
            await asyncio.sleep(interval)
            if not rebuilt.is_set():
                continue
            if time.monotonic() >= next_lease_check:
                next_lease_check = time.monotonic() + ttl / 3
                if handlers.leader and not await lease.renew():
                    handlers.step_down()
                elif not handlers.leader and (held := await lease.acquire()) is not None:
                    await handlers.become_leader(held.epoch, instance, held.previous)
            if handlers.leader:
                await handlers.maybe_cycle()
    finally:
        ctx.stop.set()
        await consumer
        if handlers.leader:
            await lease.release()
