"""Composition root of the allocator service: config from the environment, then run."""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import time
from pathlib import Path

import msgspec
import yaml
from muster import snapshotting
from muster.lease import Lease, lease_bucket
from muster.service import ServiceContext, rebuild_then_consume
from muster.snapshots import ObjectStoreSnapshots
from muster.snapshotting import Snapshotter
from muster.subjects import Subjects

from services.allocator.config import AllocatorConfig
from services.allocator.engine import Allocator
from services.allocator.fold import fold_name
from services.allocator.handlers import AllocatorHandlers
from services.allocator.snapshot import AllocatorCodec

log = logging.getLogger(__name__)


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


async def tend_lease(handlers: AllocatorHandlers, lease: Lease) -> None:
    """One look at the lease: keep it, give it up, or take it at an epoch above every one the log has seen."""
    log_epoch = handlers.fold.log_epoch
    if handlers.leader:
        if log_epoch > handlers.epoch:
            # Another election was recorded after ours (a lease bucket lost and recreated elects anew):
            # the binder now refuses every decision of our epoch. Stand down, and take the lease again
            # above the log's epoch at the next look if it is still ours.
            log.warning(
                "pool %s: the log elected epoch %d over ours (%d); standing down", handlers.pool,
                log_epoch, handlers.epoch,
            )  # fmt: skip
            handlers.step_down()
        elif not await lease.renew():
            handlers.step_down()
        return
    held = await lease.acquire(log_epoch)
    if held is not None:
        await handlers.become_leader(held.epoch, lease.holder, held.previous)


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
    # Only a snapshot taken under this very configuration is restored: another would have folded the
    # log differently. Each records its configuration, for replay to start from it.
    snapshots = Snapshotter(
        await ObjectStoreSnapshots.open(ctx.bus.js, ctx.subjects.stream),
        fold_name(pool),
        handlers.fold,
        AllocatorCodec(),
        config=msgspec.to_builtins(config),
        config_digest=config.digest(),
        **snapshotting.settings(env),
    )
    start_seq = await snapshots.restore(await ctx.bus.first_seq())
    rebuilt = asyncio.Event()

    async def on_rebuilt() -> None:
        rebuilt.set()

    async def handle(deliveries, live: bool) -> None:
        await handlers.handle(deliveries, live)
        if snapshots.due(live=live, leader=handlers.leader):
            await snapshots.take()

    # Every instance, leader or standby, folds the log from the newest snapshot on: a standby's state
    # is warm when it takes over.
    consumer = asyncio.create_task(
        rebuild_then_consume(
            # Leader and standbys dead-letter under one name, so a bad message is lettered once.
            ctx,
            f"allocator-{pool}",
            consumed_subjects(ctx.subjects, pool),
            handle,
            on_rebuilt=on_rebuilt,
            start_seq=start_seq,
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
                await tend_lease(handlers, lease)
            if handlers.leader:
                await handlers.maybe_cycle()
    finally:
        ctx.stop.set()
        await consumer
        if handlers.leader:
            await lease.release()
