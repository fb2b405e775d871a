"""Composition root of the allocator service: config from the environment, then run."""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import msgspec
import yaml
from muster import liveness, snapshotting
from muster.lease import Lease, lease_bucket
from muster.scheduler.config import AllocatorConfig
from muster.scheduler.engine import Allocator
from muster.scheduler.fold import consumed_subjects, fold_name
from muster.scheduler.snapshot import AllocatorCodec
from muster.service import ServiceContext, rebuild_then_consume
from muster.snapshots import ObjectStoreSnapshots
from muster.snapshotting import Snapshotter
from muster.warmup import warm_kernels

from services.allocator.handlers import AllocatorHandlers

log = logging.getLogger(__name__)


def load_config(env: dict[str, str]) -> AllocatorConfig:
    """``MUSTER_ALLOCATOR_CONFIG`` names a YAML file of AllocatorConfig fields; default config otherwise.

    A live allocator forgets finished jobs unless the file says otherwise (``forget_finished``): its
    state, its snapshots and its restarts then follow the cluster, not the length of its history.
    """
    path = env.get("MUSTER_ALLOCATOR_CONFIG")
    data = (yaml.safe_load(Path(path).read_text()) or {}) if path else {}
    if isinstance(data, dict):
        data.setdefault("forget_finished", True)
    return msgspec.convert(data, AllocatorConfig)


async def tend_lease(
    handlers: AllocatorHandlers, lease: Lease, gone: Callable[[str], Awaitable[bool]] | None = None
) -> None:
    """One look at the lease: keep it, give it up, or take it at an epoch above every one the log has seen.

    ``gone(holder)``: whether the holder's process is known to be dead (``muster.liveness``); a
    standby then takes the lease without waiting for it to lapse."""
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
            log.warning(
                "pool %s: lost the lease of epoch %d (%.2f s past its expiry); standing down",
                handlers.pool, handlers.epoch, -lease.remaining(),
            )  # fmt: skip
            handlers.step_down()
        return
    held = await lease.acquire(log_epoch)
    holder = lease.others_holder
    if held is None and holder is not None and gone is not None and await gone(holder):
        log.warning("pool %s: the lease's holder %s is gone; taking over", handlers.pool, holder)
        held = await lease.acquire(log_epoch, gone=holder)
    if held is not None:
        await handlers.become_leader(held.epoch, lease.holder, held.previous)


LOOK_AFTER_EXPIRY = 0.01
"""Seconds after a held lease's expiry at which a standby looks again (clock resolution, no more)."""
PROBE_EVERY = 0.2
"""Seconds between a standby's looks while another instance holds the lease: each asks whether the
holder is still there, so a holder that crashed is replaced this soon, at any ttl."""
PROBE_TIMEOUT = 0.5
"""Seconds a probe waits for the holder's answer; no answer in time reads as alive (a busy holder)."""
RENEW_BEFORE_CYCLE = 0.9
"""A leader renews before a cycle once less than this share of the ttl is left, so a cycle (up to
most of a ttl) cannot let the lease lapse in the middle of it."""


class LeaseSchedule:
    """When an allocator looks at its pool's lease next.

    Every ``ttl / 3`` in any case. A standby that found the lease held looks again every
    ``probe_every`` (each look asks whether the holder is still there), and at the latest right after
    the expiry it read: a dead leader's lease is taken as soon as its death is seen, or it lapses.
    A leader also renews before each cycle when part of the lease is used up: the loop renews only
    between cycles, and a long cycle would otherwise run past a short lease's expiry, letting a
    standby take over from a leader that is alive. Neither changes who may hold the lease or when
    (expiry and fencing by epoch stay as they are), only how soon each look happens.
    """

    def __init__(
        self, ttl: float, monotonic: Callable[[], float] = time.monotonic, probe_every: float | None = None
    ):
        self.ttl = ttl
        self.probe_every = probe_every
        self.monotonic = monotonic
        self.next_look = 0.0

    def due(self) -> bool:
        return self.monotonic() >= self.next_look

    def looked(self, lease: Lease, leader: bool) -> None:
        """Schedule the next look after one just taken."""
        now = self.monotonic()
        delay = self.ttl / 3
        if not leader and lease.others_expire is not None:
            until_lapse = lease.others_expire - lease.clock() + LOOK_AFTER_EXPIRY
            delay = min(delay, max(0.0, until_lapse))
            if self.probe_every is not None:
                delay = min(delay, self.probe_every)
        self.next_look = now + delay

    def renew_first(self, lease: Lease) -> bool:
        """Whether a leader about to cycle should renew first."""
        return lease.remaining() < self.ttl * RENEW_BEFORE_CYCLE


async def run(ctx: ServiceContext) -> None:
    env = ctx.settings.extra
    config = load_config(env)
    pool = env.get("MUSTER_POOL", "default")
    instance = env.get("MUSTER_INSTANCE") or f"{socket.gethostname()}-{os.getpid()}"
    interval = float(env.get("MUSTER_CYCLE_INTERVAL", "0.05"))
    ttl = float(env.get("MUSTER_LEASE_TTL", "5"))
    # Warm the kernels beside the restore and the rebuild (in a thread: the consumer keeps reading);
    # contend for the lease only when all are done, so a cold instance does not win the lease over a
    # warm one.
    warmed = asyncio.create_task(asyncio.to_thread(warm_kernels, config))
    engine = Allocator(config, frozenset({pool}))
    handlers = AllocatorHandlers(
        ctx.bus, ctx.subjects, engine, clock=time.time, pool=pool, metrics=ctx.metrics
    )
    lease = Lease(await lease_bucket(ctx.bus.js, ctx.subjects.stream), pool, instance, ttl)
    # Every instance answers for itself from the start: a standby asks the holder before waiting out
    # its lease.
    await liveness.answer_probes(ctx.bus.nc, ctx.subjects.alive(pool, instance))

    async def holder_gone(holder: str) -> bool:
        return await liveness.gone(ctx.bus.nc, ctx.subjects.alive(pool, holder), min(PROBE_TIMEOUT, ttl / 3))

    # A snapshot of this configuration is restored first; after a configuration change, one of the old
    # (the state folded is the same; the image refuses one folded for other pools, usage window or
    # forgetting). Each records its configuration, for replay to decide with it.
    snapshots = Snapshotter(
        await ObjectStoreSnapshots.open(ctx.bus.js, ctx.subjects.stream),
        fold_name(pool),
        handlers.fold,
        AllocatorCodec(),
        config=msgspec.to_builtins(config),
        config_digest=config.digest(),
        **snapshotting.settings(env),
    )
    # MUSTER_SNAPSHOTS=off: neither restore nor take any (the whole log is folded at each start).
    start_seq = 1
    if ctx.settings.switch("MUSTER_SNAPSHOTS"):
        start_seq = await snapshots.restore(await ctx.bus.first_seq(), await ctx.bus.last_seq())
    else:
        snapshots.every = 0
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
    schedule = LeaseSchedule(ttl, probe_every=PROBE_EVERY)
    try:
        while not ctx.stop.is_set() and not consumer.done():
            await asyncio.sleep(interval)
            if not rebuilt.is_set() or not warmed.done():
                continue
            warmed.result()  # a warm-up that failed is a broken allocator: say so, do not lead
            if schedule.due() or (
                handlers.leader and handlers.ready(handlers.clock()) and schedule.renew_first(lease)
            ):
                await tend_lease(handlers, lease, holder_gone)
                schedule.looked(lease, handlers.leader)
            if handlers.leader:
                started = time.monotonic()
                cycled = await handlers.maybe_cycle()
                took = time.monotonic() - started
                if cycled and took > ttl / 3:
                    log.warning(
                        "pool %s: a cycle took %.2f s of the lease's %g s; one longer than what is left of "
                        "the lease lets it lapse, and a standby take over", pool, took, ttl,
                    )  # fmt: skip
    finally:
        ctx.stop.set()
        await consumer
        if handlers.leader:
            await lease.release()
