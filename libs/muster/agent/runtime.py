"""The agent process: register the node, heartbeat, follow the log, run what it says.

One loop owns all state. Deliveries from the log, process exits and the
heartbeat timer only wake it; each wake runs ``plan.decide`` and performs
its actions until nothing new is asked. Reports carry message ids derived
from the placement (the stream sequence of its BindRequested), so a report
published twice, by a retry or by a restarted agent, is stored once.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
import signal
import socket
import time
from dataclasses import dataclass, field
from pathlib import Path

from nats.js.kv import KeyValue

from muster import events as ev
from muster import secrets_store, snapshotting
from muster.agent import logs
from muster.agent.machine import ADDRESS_LABEL
from muster.agent.plan import Forget, Local, NodeLog, PodKey, PodRun, Report, Start, Stop, decide
from muster.agent.procs import Processes, alive, master_port, pod_env
from muster.agent.sandbox import PodFolders, RunAs, default_pods_dir
from muster.agent.snapshot import AgentCodec
from muster.bus import NatsBus
from muster.fact_admission import NOWHERE, UNCHECKED, refusal
from muster.runtime.security import NatsCredentials, agent_user
from muster.runtime.settings import Endpoints, Settings
from muster.service import ServiceContext, rebuild_then_consume

log = logging.getLogger("muster.agent")


@dataclass(frozen=True)
class AgentConfig:
    node: ev.NodeSpec
    home: Path
    heartbeat: float = 2.0
    """Seconds between NodeUpdated heartbeats; keep well under the node monitor's timeout."""
    grace_period: float = 30.0
    """SIGTERM-to-SIGKILL seconds for pods that do not set their own."""
    address: str = field(default_factory=socket.gethostname)
    """How other machines reach this one (MASTER_ADDR of gangs whose rank 0 runs here)."""
    run_as: RunAs | None = None
    """The user pods run as (None: the agent's own; see ``muster.agent.sandbox``)."""
    pods_dir: Path | None = None
    """Where each pod gets its own folder (None: under the system's temporary folder)."""
    credentials: NatsCredentials | None = field(default=None, repr=False)
    """The node's own NATS login (``muster.agent_logins``); None: as any client finds its login."""

    @property
    def directory(self) -> Path:
        return self.home / "agent" / self.node.name

    def pod_folders(self) -> PodFolders:
        return PodFolders(self.pods_dir or default_pods_dir(self.node.name), self.run_as)


def consumer_name(node: str) -> str:
    """The agent's durable consumer and fold: named as its node's own NATS user is."""
    return agent_user(node)


class Agent:
    def __init__(self, config: AgentConfig, bus: NatsBus):
        self.config = config
        self.bus = bus
        self.subjects = bus.subjects
        self.node = config.node.name
        self.pool = config.node.pool
        self.log = NodeLog(self.node)
        folders = config.pod_folders()
        folders.prepare()
        self.procs = Processes(config.directory, self.node, folders)
        self.local: dict[PodKey, Local] = {}
        self.wake = asyncio.Event()
        self.published: set[str] = set()
        self.tasks: set[asyncio.Task] = set()
        self.rank0: dict[str, str] = {}
        """Job -> the node its pod 0 was bound to (its address is MASTER_ADDR)."""
        self.addresses: dict[str, str] = {}
        """Node -> the address its agent registered."""
        self.draining = False
        self.boot = time.time_ns()
        self.watermark = 0
        """The stream sequence of the last message folded."""
        self.secrets: KeyValue | None = None
        """The secret store, once it exists (``muster.secrets_store``)."""

    # -- the log ------------------------------------------------------------------------------

    async def handle(self, deliveries: list, live: bool) -> None:
        for delivery in deliveries:
            refused = self.fold(delivery)
            if refused is not None and live:
                # Once: while the history is read after a restart, it was lettered when it was new.
                await self.bus.dead_letter(
                    consumer_name(self.node), delivery.subject, delivery.seq, refused, delivery.data
                )
        self.wake.set()

    def fold(self, delivery) -> str | None:
        """Fold one message in; why a pod fact in it was refused (the first), if one was: a pod fact the
        node's log refutes changes nothing (``muster.fact_admission``)."""
        refused = None
        for event in delivery.events:
            why = refusal(self, event)
            if why is not None:
                refused = refused or why
                continue
            self.log.apply(event, delivery.seq)
            if isinstance(event, ev.BindRequested) and event.pod == 0:
                self.rank0[event.job] = event.node
            elif isinstance(event, ev.NodeRegistered | ev.NodeUpdated):
                self.addresses[event.node.name] = event.node.labels.get(ADDRESS_LABEL, event.node.name)
        self.watermark = delivery.seq
        return refused

    # -- what the node's log knows, as ``fact_admission`` asks it ------------------------------

    def pods_of(self, job: str) -> int | None:
        found = self.log.jobs.get(job)
        return None if found is None else sum(spec.count for spec in found.pods)

    def placed_on(self, job: str, pod: int, node: str) -> str | None:
        """The node that holds the pod as this node's log tells (``NodeLog.held_by``); asked of this node,
        ``NOWHERE`` for a pod with no placement here; else None: where other nodes' pods are is not this
        agent's to know, nor whether a pod releasing here has moved on."""
        key = (job, pod)
        held = self.log.held_by(key)
        if held is not None or node != self.node:
            return held
        placement = self.log.placements.get(key)
        return NOWHERE if placement is None or placement.phase == "gone" else None

    def devices_of(self, node: str) -> int | None:
        return int(self.config.node.resources.gpu) if node == self.node else UNCHECKED

    def adopt(self) -> None:
        """Take over what a previous run of this agent started: the living, and how the others ended."""
        for record in self.procs.load():
            key = (record.job, record.pod)
            local = Local(key=key, seq=record.seq, gpus=tuple(record.gpus), share=record.share)
            if alive(record.pid, record.started):
                log.info("adopting %s pod %d (pid %d)", key[0], key[1], record.pid)
                self.local[key] = local
                self._watch(key)
            else:
                code = self.procs.recorded_exit(key)
                self.local[key] = dataclasses.replace(
                    local, exit_code=code, requeue=code is None, last_words=self._last_words(key, code)
                )

    # -- acting -------------------------------------------------------------------------------

    async def step(self) -> None:
        """Run decide until it asks for nothing that is not already under way."""
        for _ in range(4):
            actions = decide(self.log, self.local, clock=time.time(), default_grace=self.config.grace_period)
            done = 0
            for action in actions:
                match action:
                    case Start():
                        if self.draining:
                            continue
                        await self._start(action)
                        done += 1
                    case Stop(key=key, grace=grace):
                        self.local[key] = dataclasses.replace(self.local[key], stopping=True)
                        self._spawn(self.procs.stop(key, grace))
                        done += 1
                    case Report(event=event, seq=seq):
                        done += await self._report(event, seq)
                    case Forget(key=key):
                        self.local.pop(key, None)
                        self.procs.forget(key)
                        done += 1
            if not done:
                return

    async def _start(self, action: Start) -> None:
        bind, run = action.placement, action.run
        key = (bind.job, bind.pod)
        master_node = self.rank0.get(bind.job, self.node)
        master = (
            self.config.address if master_node == self.node else self.addresses.get(master_node, master_node)
        )
        variables = pod_env(run, list(bind.gpus), bind.gpu_share, self.node, (master, master_port(bind.job)))
        local = Local(key=key, seq=action.seq, gpus=tuple(bind.gpus), share=bind.gpu_share)
        try:
            secret_values = await self._secret_values(run)
        except secrets_store.MissingSecret as exc:
            # Started without the variable, a program would run on without its credentials, or worse.
            why = f"not started: {exc}"
            log.warning("%s pod %d %s", key[0], key[1], why)
            self._note_in_log(key, f"muster agent: {why}\n", owner=run.owner)
            self.local[key] = dataclasses.replace(local, exit_code=127, refused=why)
            return
        try:
            await self.procs.start(
                key,
                action.seq,
                list(run.spec.command),
                {**run.spec.env, **secret_values},
                variables,
                run.spec.workdir,
                list(bind.gpus),
                bind.gpu_share,
                owner=run.owner,
            )
        except OSError as exc:
            log.warning("cannot start %s pod %d: %s", key[0], key[1], exc)
            self._note_in_log(key, f"muster agent: cannot start: {exc}\n")
            self.local[key] = dataclasses.replace(local, exit_code=127, last_words=self._last_words(key, 127))
            return
        log.info("started %s pod %d on devices %s", key[0], key[1], list(bind.gpus))
        self.local[key] = local
        self._watch(key)

    async def _secret_values(self, run: PodRun) -> dict[str, str]:
        """The values of the pod's secret variables, read from its owner's secrets now, never kept."""
        if not run.spec.secret_env:
            return {}
        if self.secrets is None:
            self.secrets = await secrets_store.read_bucket(self.bus.js, self.subjects.stream)
        return await secrets_store.resolve(self.secrets, run.owner, run.spec.secret_env)

    def _note_in_log(self, key: PodKey, line: str, owner: str | None = None) -> None:
        """Add ``line`` to the pod's log, for its owner to read; a log that cannot be written (a full
        disk) loses the line, never the report of the failure that the line explains."""
        try:
            with open(self.procs.log_path(key, owner), "ab") as out:
                out.write(line.encode())
        except OSError as exc:
            log.warning("cannot write the log of %s pod %d: %s", key[0], key[1], exc)

    def _watch(self, key: PodKey) -> None:
        pid = self.procs.pid(key)
        seq = self.local[key].seq

        async def watch() -> None:
            code = await self.procs.wait(key)
            # Whatever the command left behind in its group goes with it.
            self.procs.signal(key, signal.SIGKILL, pid)
            current = self.local.get(key)
            if current is not None and current.seq == seq:
                exit_code = code if code is not None else -9
                self.local[key] = dataclasses.replace(
                    current,
                    exit_code=exit_code,
                    requeue=current.requeue or code is None,
                    last_words=self._last_words(key, exit_code),
                )
            log.info("%s pod %d ended (%s)", key[0], key[1], code)
            self.wake.set()

        self._spawn(watch())

    def _last_words(self, key: PodKey, code: int | None) -> str:
        # Only a failure is explained; a pod that completed needs no reason.
        return self.procs.last_line(key) if code else ""

    def _spawn(self, coro) -> None:
        task = asyncio.create_task(coro)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def _report(self, event: ev.Event, seq: int) -> int:
        key = f"{ev.event_type(event)}:{event.job}:{event.pod}:{seq}"  # type: ignore[union-attr]
        if key in self.published:
            return 0
        await self.bus.publish(
            self.subjects.node_pods(self.pool, self.node), [event], msg_id=f"agent:{self.node}:{key}"
        )
        self.published.add(key)
        return 1

    # -- the node -----------------------------------------------------------------------------

    async def register(self) -> None:
        await self.bus.publish(
            self.subjects.node_facts(self.pool, self.node),
            [ev.NodeRegistered(node=self.config.node)],
            msg_id=f"agent:{self.node}:register:{self.boot}",
        )

    async def heartbeats(self, stop: asyncio.Event) -> None:
        n = 0
        while not stop.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), self.config.heartbeat)
            if stop.is_set():
                return
            n += 1
            try:
                await self.bus.publish(
                    self.subjects.node_facts(self.pool, self.node),
                    [ev.NodeUpdated(node=self.config.node)],
                    msg_id=f"agent:{self.node}:heartbeat:{self.boot}:{n}",
                )
            except Exception:  # the bus is away: the next beat tries again
                log.warning("heartbeat failed", exc_info=True)

    async def serve_logs(self) -> None:
        async def answer(msg) -> None:
            try:
                request = logs.decode_request(msg.data)
            except Exception as exc:
                await msg.respond(logs.encode({"error": str(exc)}))
                return
            key = (request.job, request.pod)
            # The pod asked for is the owner's: a job of that name another team ran here before is not it.
            ours = self.procs.owners.get(key) == request.owner
            running = ours and key in self.local and self.local[key].running
            path = self.procs.log_path(key, request.owner)
            await msg.respond(logs.encode(logs.read_chunk(path, request, running)))

        await self.bus.nc.subscribe(self.subjects.agent_logs(self.node), cb=answer)

    async def drain(self) -> None:
        """Stop every pod (SIGTERM, then SIGKILL past its grace), report each evicted, leave the pool."""
        self.draining = True
        waits = []
        for key, local in sorted(self.local.items()):
            if local.running:
                self.local[key] = dataclasses.replace(local, stopping=True, requeue=True)
                waits.append(self.procs.stop(key, self._grace(key)))
        await asyncio.gather(*waits)
        for _ in range(50):
            if all(not lp.running for lp in self.local.values()):
                break
            await asyncio.sleep(0.05)
        for key in list(self.local):
            self.local[key] = dataclasses.replace(self.local[key], requeue=True)
        await self.step()
        for key, placement in sorted(self.log.placements.items()):
            if placement.phase == "binding" and key not in self.local:
                bind = placement.bind
                evicted = ev.PodEvicted(job=bind.job, pod=bind.pod, node=self.node, pool=bind.pool)
                await self._report(evicted, placement.seq)
        await self.bus.publish(
            self.subjects.node_facts(self.pool, self.node),
            [ev.NodeRemoved(name=self.node, pool=self.pool)],
            msg_id=f"agent:{self.node}:drained:{self.boot}",
        )

    def _grace(self, key: PodKey) -> float:
        run = self.log.run_of(key)
        if run is not None and run.spec.grace_period is not None:
            return run.spec.grace_period
        return self.config.grace_period


def snapshot_owner(config: AgentConfig) -> str:
    """Whose snapshot store the agent writes and restores from: its node's own, when it logs in as its
    node's own user (no other login may write there), else the store the shared ``agent`` login writes."""
    own = agent_user(config.node.name)
    return own if config.credentials is not None and config.credentials.user == own else "agent"


async def run_agent(config: AgentConfig, endpoints: Endpoints, stop: asyncio.Event) -> None:
    """Run one machine's agent until ``stop`` is set; then drain the node."""
    bus = await NatsBus.connect(
        endpoints.nats_url,
        endpoints.subjects,
        service=consumer_name(config.node.name),
        credentials=config.credentials,
    )
    agent = Agent(config, bus)
    s = endpoints.subjects
    pool = config.node.pool
    rebuilt = asyncio.Event()
    # The agent's fold starts from its node's newest snapshot: the log's tail is all it reads at start.
    snapshots, start_seq = await snapshotting.restored(
        bus,
        consumer_name(config.node.name),
        agent,
        AgentCodec(),
        owner=snapshot_owner(config),
        env=os.environ,
    )

    async def handle(deliveries: list, live: bool) -> None:
        await agent.handle(deliveries, live)
        # Only the fold changes what is imaged (decide reads the node's log, never writes it).
        if snapshots.due(live=live):
            await snapshots.take()

    async def on_rebuilt() -> None:
        agent.adopt()
        await agent.register()
        await agent.serve_logs()
        rebuilt.set()

    ctx = ServiceContext(
        name=consumer_name(config.node.name), settings=Settings(home=config.home), endpoints=endpoints, bus=bus,
        stop=stop,
    )  # fmt: skip
    consumer = asyncio.create_task(
        rebuild_then_consume(
            ctx,
            consumer_name(config.node.name),
            [s.podgroups, *s.node_subjects(pool), s.decisions(pool), *s.pod_subjects(pool)],
            handle,
            on_rebuilt=on_rebuilt,
            start_seq=start_seq,
        )
    )
    beats = asyncio.create_task(agent.heartbeats(stop))
    try:
        while not stop.is_set() and not consumer.done():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(agent.wake.wait(), 0.5)
            agent.wake.clear()
            if rebuilt.is_set():
                try:
                    await agent.step()
                except Exception:  # the bus is away: the next wake tries again
                    log.warning("step failed", exc_info=True)
        if consumer.done() and consumer.exception() is not None:
            raise consumer.exception()  # type: ignore[misc]
        if rebuilt.is_set():
            await agent.drain()
    finally:
        stop.set()
        beats.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await consumer
        for task in list(agent.tasks):
            task.cancel()
        await bus.close()
