"""Composition root of the allocator service: config from the environment, then run."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import msgspec
import yaml
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
    interval = float(env.get("MUSTER_CYCLE_INTERVAL", "0.05"))
    engine = Allocator(config, frozenset({pool}))
    handlers = AllocatorHandlers(ctx.bus, ctx.subjects, engine, clock=time.time, pool=pool)
    subjects = consumed_subjects(ctx.subjects, pool)
    rebuilt = asyncio.Event()

    async def on_rebuilt() -> None:
        await handlers.announce()
        rebuilt.set()

    consumer = asyncio.create_task(
        rebuild_then_consume(ctx, f"allocator-{pool}", subjects, handlers.handle, on_rebuilt=on_rebuilt)
    )
    try:
        while not ctx.stop.is_set() and not consumer.done():
            await asyncio.sleep(interval)
            if rebuilt.is_set():
                await handlers.maybe_cycle()
    finally:
        ctx.stop.set()
        await consumer
