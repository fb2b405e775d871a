"""A long history in a stream of its own: what replay and cold-restart benchmarks read.

``simulated_history(events)`` runs the demo workload through the real
allocator and simulated fleet (``muster.simulate``), paced like a busy
cluster rather than a demo: jobs arrive ``PACE`` times slower and run
``PACE`` times longer (with the default, ten jobs a minute, each running
two to six minutes), so the history's clock spans hours to days. Events are
grouped into messages by subject as the live services publish them, and
each message's ``seq`` is its position in the log, 1, 2, 3, ..., exactly
the stream sequence it gets in a fresh stream; the watermark each
``CycleCompleted`` records is mapped to the same numbering, so the history
replays from the stream as it does from memory.

``write_history(target, events)`` puts such a history into a fresh stream
(a prefix of its own) with pipelined publishes, acknowledgements counted
rather than awaited one by one, and checks that every message landed at its
own sequence. It returns a ``HistoryInfo``: the prefix to read it under,
the counts, and the span of the history's clock, "how long it took live".

``run(quick)`` is the benchmark row for issue #17's (b): replaying the
history is at least ``REPLAY_TARGET_RATIO`` times faster than it took live.
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import hashlib
import itertools
import json
import math
import os
import tempfile
import time
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path

import msgspec

from muster import events as ev
from muster.bench.replay import _subject
from muster.bus import chunk_events
from muster.bus.nats import NatsBus
from muster.cycle_record import cycle_record
from muster.demo import demo_scenario
from muster.replay import LoggedMessage, load_log, replay, save_log
from muster.runtime.settings import Endpoints, Settings
from muster.scenario import parse_scenario
from muster.scenario.convert import allocator_config, scenario_events
from muster.simulate import Simulation
from muster.subjects import Subjects

PACE = 30.0
"""How much slower than the demo the history runs: its arrivals and its jobs' runtimes, stretched."""
NODES = 128
"""Enough 8-GPU nodes for the demo's mix at any length: the backlog stays steady, not growing."""
PUBLISH_WINDOW = 4096
"""Publishes in flight, unacknowledged, at most."""
REPLAY_TARGET_RATIO = 50.0
"""Issue #17 (b): a full replay at least this many times faster than the history took live."""
PILOT_JOBS = 100
QUICK_EVENTS = 5_000
FULL_EVENTS = 1_000_000
CACHE = Path.home() / ".cache" / "muster" / "histories"
"""Where simulated histories are kept between runs: simulating one costs about as much as replaying it."""


@dataclass(frozen=True)
class HistoryInfo:
    """What ``write_history`` wrote, and where."""

    prefix: str
    """The subjects' prefix; the stream is ``Subjects(prefix).stream``."""
    stream: str
    messages: int
    """Messages in the stream: sequences 1 to ``messages``."""
    events: int
    cycles: int
    """Recorded allocator cycles (``CycleCompleted``)."""
    jobs: int
    nodes: int
    first_clock: float
    last_clock: float
    write_seconds: float
    """Wall time to publish the history, every acknowledgement received."""

    @property
    def live_seconds(self) -> float:
        """How long the history took live: its clock from the first recorded cycle to the last."""
        return self.last_clock - self.first_clock

    @property
    def subjects(self) -> Subjects:
        return Subjects(self.prefix)

    def to_builtins(self) -> dict:
        return {**asdict(self), "live_seconds": self.live_seconds}


def paced_scenario(jobs: int, *, nodes: int = NODES, pace: float = PACE, seed: int = 7) -> dict:
    """The demo workload with its clock stretched ``pace`` times: arrivals, runtimes and cycle step."""
    scenario = demo_scenario(nodes=nodes, jobs=jobs, seed=seed)
    for queue in scenario["queues"]:
        if queue["name"] == "notebooks":
            # The demo's 2 GPUs keep a few notebooks waiting; over days, thousands would wait, every cycle
            # walking them. A cluster this busy gives its notebooks a share of its size.
            queue["resources"]["gpu"]["quota"] = max(2, nodes // 4)
    for job in scenario["jobs"]:
        job["submitted_at"] *= pace
        job["duration"] *= pace
    # One cycle per `pace` seconds of virtual time, as many cycles per job as the demo has: enough to run
    # every job to completion.
    scenario["config"] = {"time_step": pace, "max_cycles": 10 * jobs + 1000}
    return scenario


def simulated_history(jobs: int, *, nodes: int = NODES, pace: float = PACE) -> list[LoggedMessage]:
    """A history of ``jobs`` jobs as the live system would log it, numbered as a fresh stream numbers it.

    Unlike ``Simulation.run``, which registers every job of the scenario at the start (each waiting for
    its submission time), a job's pod group goes onto the log when the clock reaches its submission,
    as the podgrouper would publish it: the log reads like a live one, and each cycle works on the jobs
    that have arrived, not on every job of the next days.
    """
    scenario = parse_scenario(paced_scenario(jobs, nodes=nodes, pace=pace))
    # Decided as the allocator service decides: forgetting finished jobs, its default.
    config = msgspec.structs.replace(allocator_config(scenario), forget_finished=True)
    simulation = Simulation(scenario, config=config)
    _run_arriving(simulation)
    groups: list[tuple[str, list[ev.Event]]] = []
    for event in simulation.log.events:
        subject = _subject(event)
        if groups and groups[-1][0] == subject and not isinstance(groups[-1][1][-1], ev.CycleCompleted):
            groups[-1][1].append(event)
        else:
            groups.append((subject, [event]))
    # A message stays under the envelope limit, as the live services' do.
    groups = [(subject, chunk) for subject, events in groups for chunk in chunk_events(events)]
    # The simulation numbers events; a stream numbers messages. A cycle's watermark (the index of the last
    # event it read, always the end of a message) becomes that message's number.
    ends = list(itertools.accumulate(len(events) for _, events in groups))
    # First, as a live allocator announces it, the configuration the history was decided with.
    announced = ev.AllocatorConfigured(
        pool="default", config=msgspec.json.decode(msgspec.json.encode(config)), digest=config.digest()
    )
    log = [LoggedMessage(1, SIMULATED.decisions("default"), [announced])]
    for number, (subject, events) in enumerate(groups, start=2):
        events = [
            msgspec.structs.replace(e, watermark=_message_of(ends, e.watermark) + 1)
            if isinstance(e, ev.CycleCompleted)
            else e
            for e in events
        ]
        log.append(LoggedMessage(number, subject, events))
    return log


def _run_arriving(simulation: Simulation) -> None:
    """Drive ``simulation`` cycle by cycle, each job's pod group published once its submission is due;
    stop once every job has arrived and a cycle changed nothing while nothing waits for time."""
    scenario = simulation.scenario
    events = scenario_events(scenario)
    arrivals = sorted(
        (e for e in events if isinstance(e, ev.PodGroupCreated)), key=lambda e: (e.submitted_at, e.name)
    )
    simulation.publish([e for e in events if not isinstance(e, ev.PodGroupCreated)])
    simulation.publish(simulation.fleet.step(0.0))
    clock, step, due = 0.0, scenario.config.time_step, 0
    for _ in range(scenario.config.max_cycles):
        arrived = due
        while due < len(arrivals) and arrivals[due].submitted_at <= clock:
            due += 1
        simulation.publish(arrivals[arrived:due])
        changed = simulation.cycle(clock)
        if due == len(arrivals) and not changed and not simulation.waiting_for_time(clock):
            break
        clock += step


def _message_of(ends: list[int], index: int) -> int:
    """The number of the last message wholly at or before event ``index`` (0: none)."""
    return bisect.bisect_right(ends, index)


def history_of(
    events_target: int, *, nodes: int = NODES, pace: float = PACE, cache: Path | None = CACHE
) -> list[LoggedMessage]:
    """A simulated history of about ``events_target`` events (it ends at a cycle's record, at or below the
    target when the simulation is long enough): a short pilot run sets how many jobs that takes.

    Kept under ``cache`` (None: not kept), keyed by everything that shapes it, this code's version too.
    """
    if cache is None:
        return _simulate(events_target, nodes, pace)
    key = f"{events_target}-{nodes}-{pace:g}-{_code_digest()}"
    path = cache / f"history-{key}.jsonl"
    if path.exists():
        return load_log(path)
    log = _simulate(events_target, nodes, pace)
    cache.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(f".{os.getpid()}.part")
    save_log(log, partial)
    partial.replace(path)
    return log


def _code_digest() -> str:
    """What the simulated history depends on: this module, the demo, the allocator, the fleet and how
    cycles are recorded."""
    import muster.fleet
    import muster.scenario
    import muster.scheduler

    roots = [Path(__file__), Path(demo_scenario.__code__.co_filename), Path(ev.__file__)]
    roots.append(Path(Simulation.__init__.__code__.co_filename))
    roots.append(Path(cycle_record.__code__.co_filename))
    for package in (muster.scheduler, muster.fleet, muster.scenario):
        roots += sorted(Path(package.__path__[0]).rglob("*.py"))
    digest = hashlib.sha256()
    for path in roots:
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


def _simulate(events_target: int, nodes: int, pace: float) -> list[LoggedMessage]:
    pilot = simulated_history(PILOT_JOBS, nodes=nodes, pace=pace)
    per_job = sum(len(m.events) for m in pilot) / PILOT_JOBS
    # A short pilot over-counts per job (its drain is a larger share); aim high, the cut trims the rest.
    jobs = max(1, math.ceil(events_target / per_job * 1.2))
    log = pilot if jobs <= PILOT_JOBS else simulated_history(jobs, nodes=nodes, pace=pace)
    return _cut(log, events_target)


def _cut(log: list[LoggedMessage], events_target: int) -> list[LoggedMessage]:
    """The longest prefix of whole cycles with at most ``events_target`` events (at least one cycle)."""
    total, end = 0, 0
    for i, message in enumerate(log):
        total += len(message.events)
        if total > events_target and end:
            break
        if isinstance(message.events[-1], ev.CycleCompleted):
            end = i + 1
    return log[:end] if end else log


def clock_span(log: list[LoggedMessage]) -> tuple[float, float]:
    """The clock of the first and last recorded cycle."""
    clocks = [e.clock for m in log for e in m.events if isinstance(e, ev.CycleCompleted)]
    return (min(clocks), max(clocks)) if clocks else (0.0, 0.0)


SIMULATED = Subjects("muster")
"""The prefix a simulated history's subjects are under; written, they move to the stream's own."""


def moved(subject: str, subjects: Subjects, source: Subjects = SIMULATED) -> str:
    """``subject`` of the ``source`` prefix, under ``subjects``' prefix."""
    rest = subject.removeprefix(f"{source.prefix}.")
    return f"{subjects.prefix}.{rest}"


async def publish_log(bus: NatsBus, log: list[LoggedMessage], *, window: int = PUBLISH_WINDOW) -> None:
    """Publish ``log`` (subjects under ``SIMULATED``) in order into the bus's stream, which must be empty,
    under the bus's prefix; each message must land at its own ``seq``. Pipelined: plain publishes with a reply inbox, at most ``window`` unacknowledged, the
    acknowledgements counted as they come back (PERFORMANCE-NOTES: ~2x ``publish_async``).

    One connection's publishes reach the server in order, so in a stream nobody else writes to the
    sequences follow the log; every acknowledgement is checked against it all the same.
    """
    nc = bus.nc
    inbox = nc.new_inbox()
    acked = 0
    errors: list[str] = []
    progress = asyncio.Event()
    want = {i: m.seq for i, m in enumerate(log)}

    async def on_ack(msg) -> None:
        nonlocal acked
        i = int(msg.subject.rsplit(".", 1)[1])
        try:
            reply = json.loads(msg.data)
        except ValueError:  # an empty reply: no stream took the message
            reply = {"error": msg.data.decode(errors="replace") or f"no stream for {msg.headers}"}
        if "error" in reply:
            errors.append(f"message {i}: {reply['error']}")
        elif reply.get("seq") != want[i]:
            errors.append(f"message {i} landed at sequence {reply.get('seq')}, not {want[i]}")
        acked += 1
        progress.set()

    sub = await nc.subscribe(f"{inbox}.*", cb=on_ack, pending_msgs_limit=4 * window)
    try:
        for i, message in enumerate(log):
            while i - acked >= window and not errors:
                progress.clear()
                await asyncio.wait_for(progress.wait(), timeout=30)
            if errors:
                break
            subject = moved(message.subject, bus.subjects)
            await nc.publish(subject, ev.encode_envelope(message.events), reply=f"{inbox}.{i}")
        while acked < len(log) and not errors:
            progress.clear()
            await asyncio.wait_for(progress.wait(), timeout=30)
    finally:
        await sub.unsubscribe()
    if errors:
        raise RuntimeError(f"history not written as logged: {errors[0]} ({len(errors)} problems)")


async def write_history(
    target: Endpoints | NatsBus, events_target: int, *, log: list[LoggedMessage] | None = None
) -> HistoryInfo:
    """Simulate a history of about ``events_target`` events (or take ``log``, numbered 1, 2, 3, ...) and
    write it into a fresh stream of a new prefix on ``target``'s server; the stream is left in place for
    the caller to read (``NatsBus.read``, ``muster.replay.log_from_nats``) and to delete."""
    if log is None:
        log = await asyncio.to_thread(history_of, events_target)
    if any(m.seq != number for number, m in enumerate(log, start=1)):
        raise ValueError("a history to write must be numbered 1, 2, 3, ...")
    prefix = f"hist{uuid.uuid4().hex[:10]}"
    subjects = Subjects(prefix)
    if isinstance(target, NatsBus):
        bus, own = NatsBus(target.nc, subjects, service=target.service), False
        await bus.ensure_stream()
    else:
        bus, own = await NatsBus.connect(target.nats_url, subjects, service="bench-history"), True
    try:
        started = time.perf_counter()
        await publish_log(bus, log)
        seconds = time.perf_counter() - started
        last = await bus.last_seq()
        if last != len(log):
            raise RuntimeError(f"the stream ends at sequence {last}, the history at {len(log)}")
    finally:
        if own:
            await bus.close()
    first_clock, last_clock = clock_span(log)
    return HistoryInfo(
        prefix=prefix,
        stream=subjects.stream,
        messages=len(log),
        events=sum(len(m.events) for m in log),
        cycles=sum(isinstance(e, ev.CycleCompleted) for m in log for e in m.events),
        jobs=sum(isinstance(e, ev.PodGroupCreated) for m in log for e in m.events),
        nodes=sum(isinstance(e, ev.NodeRegistered) for m in log for e in m.events),
        first_clock=first_clock,
        last_clock=last_clock,
        write_seconds=round(seconds, 3),
    )


async def delete_history(target: Endpoints | NatsBus, info: HistoryInfo) -> None:
    if isinstance(target, NatsBus):
        await target.js.delete_stream(info.stream)
        return
    bus = await NatsBus.connect(target.nats_url, info.subjects, service="bench-history")
    try:
        await bus.js.delete_stream(info.stream)
    finally:
        await bus.close()


# -- the benchmark -------------------------------------------------------------------------------


def _span_words(seconds: float) -> str:
    return f"{seconds / 3600:.1f} h" if seconds >= 3600 else f"{seconds / 60:.1f} min"


async def _measure(endpoints: Endpoints, events_target: int) -> dict:
    from muster.replay import log_from_nats

    built = time.perf_counter()
    log = await asyncio.to_thread(history_of, events_target)
    simulate_seconds = time.perf_counter() - built
    info = await write_history(endpoints, events_target, log=log)
    bus = await NatsBus.connect(endpoints.nats_url, info.subjects, service="bench-history")
    try:
        read = time.perf_counter()
        stored = await log_from_nats(bus)
        read_seconds = time.perf_counter() - read
        folded = time.perf_counter()
        report = replay(stored, info.subjects)
        replay_seconds = time.perf_counter() - folded
    finally:
        with contextlib.suppress(Exception):
            await bus.js.delete_stream(info.stream)
        await bus.close()
    total = read_seconds + replay_seconds
    ratio = info.live_seconds / total if total > 0 else 0.0
    return {
        "name": (
            f"full replay of {info.events} events ({info.cycles} cycles, {info.jobs} jobs on {info.nodes} "
            f"nodes) from the stream vs its {_span_words(info.live_seconds)} live"
        ),
        "value": round(ratio, 1),
        "unit": "x faster than live",
        "target": REPLAY_TARGET_RATIO,
        "met": ratio >= REPLAY_TARGET_RATIO,
        "live_seconds": round(info.live_seconds, 1),
        "pacing": f"demo mix x{PACE:g}: 10 jobs a minute, each running {4 * PACE / 60:g}-{12 * PACE / 60:g} min",
        "replay_only_ratio": round(info.live_seconds / replay_seconds, 1) if replay_seconds > 0 else None,
        "read_seconds": round(read_seconds, 3),
        "replay_seconds": round(replay_seconds, 3),
        "divergences": report.divergences,
        "events": info.events,
        "messages": info.messages,
        "write_seconds": info.write_seconds,
        "write_messages_per_second": round(info.messages / info.write_seconds, 1)
        if info.write_seconds
        else None,
        "simulate_seconds": round(simulate_seconds, 3),
    }


def run(quick: bool = False, events_target: int | None = None) -> list[dict]:
    """Issue #17 (b): write a history into a stream, replay it all, compare with how long it took live.

    Against the configured NATS (``MUSTER_NATS_URL``), else an embedded one of its own.
    """
    from muster.runtime.embedded import embedded_servers

    events_target = events_target or (QUICK_EVENTS if quick else FULL_EVENTS)
    base = Settings.from_env()
    if base.nats_url:
        return [asyncio.run(_measure(Endpoints(nats_url=base.nats_url, pg_dsn=""), events_target))]
    with (
        tempfile.TemporaryDirectory(prefix="muster-bench-") as home,
        embedded_servers(Path(home), nats=True, postgres=False) as (nats_url, _),
    ):
        return [asyncio.run(_measure(Endpoints(nats_url=nats_url, pg_dsn=""), events_target))]
