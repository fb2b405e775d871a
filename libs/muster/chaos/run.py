"""The fault suite: a loaded live system, services killed and servers restarted, then audited.

    python -m muster.chaos.run --jobs 5000 --seed 1

Starts its own embedded NATS and Postgres (it has to restart them), every
core service as a process, registers a simulated fleet and submits jobs
over a window while the seeded fault plan runs (each service SIGKILLed and
restarted, NATS restarted, Postgres stopped for ``--pg-outage`` seconds).
Once every job has settled it reads the whole log back and checks it: no
pod bound twice, no device over capacity at any point, every job running,
completed or pending with a reason, nothing submitted lost, no service
exited by itself, the Postgres projection equal to a fresh projection of
the log, and ``muster replay`` finding no divergence. Prints a table of
counts and exits 1 on any violation.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import asyncpg

from muster.bus import Delivery, NatsBus
from muster.chaos.checks import check_log
from muster.chaos.faults import KILL, KINDS, NATS_RESTART, PG_OUTAGE, Fault, plan_faults
from muster.chaos.workload import fleet, jobs, queues
from muster.replay import LoggedMessage, log_from_nats, replay, save_log
from muster.runtime.embedded import EmbeddedNats, EmbeddedNatsCluster, EmbeddedPostgres
from muster.runtime.settings import Endpoints, Settings
from muster.runtime.system import System, running_system
from muster.sdk import Client
from muster.store import create_pool, schema_for
from muster.store.sink import PostgresSink
from muster.stream_replicas import ENV as REPLICAS_ENV
from muster.stream_replicas import MAX as MAX_REPLICAS

SERVICES = ("projector", "queue_controller", "podgrouper", "allocator", "binder")
SERVICE_ENV = {"MUSTER_CYCLE_INTERVAL": "0.02", "MUSTER_LEASE_TTL": "2"}
BATCH = 50  # jobs per WorkloadSubmitted
# Columns that record when a row was written, not what the log says.
_WALL_CLOCK_COLUMNS = {"recorded_at"}


@dataclass
class ChaosOptions:
    jobs: int = 5000
    seed: int = 1
    nodes: int = 64
    window: float = 40.0
    """Seconds over which jobs are submitted and faults fall."""
    pg_outage: float = 30.0
    min_duration: float = 1.0
    max_duration: float = 4.0
    settle_timeout: float = 600.0
    nats_restarts: int = 1
    faults: tuple[str, ...] = KINDS
    home: Path | None = None
    nats_servers: int = 1
    """Above 1: a JetStream cluster of that many servers, every stream and bucket replicated on each, and
    a NATS fault crashes one member (SIGKILL) in turn instead of restarting the only server."""


@dataclass
class ChaosResult:
    counts: dict[str, int | float] = field(default_factory=dict)
    violations: list[str] = field(default_factory=list)
    faults: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.violations


@dataclass
class _Tally:
    kills: int = 0
    restarts: int = 0
    nats_restarts: int = 0
    pg_outages: int = 0
    exits: list[str] = field(default_factory=list)
    submit_retries: int = 0


def _say(verbose: bool) -> Callable[[str], None]:
    started = time.monotonic()

    def say(text: str) -> None:
        if verbose:
            print(f"[{time.monotonic() - started:6.1f}s] {text}", file=sys.stderr, flush=True)

    return say


async def _retry(what: Callable, say, tally: _Tally | None = None, attempts: int = 60):
    """Call ``what()`` until it succeeds: the bus may be restarting under us."""
    for attempt in range(attempts):
        try:
            return await what()
        except Exception as exc:  # noqa: BLE001 - any bus trouble is retried, the last one raised
            if attempt == attempts - 1:
                raise
            if tally is not None:
                tally.submit_retries += 1
            say(f"retrying after {type(exc).__name__}: {exc}")
            await asyncio.sleep(1.0)


async def _run_faults(
    plan: list[Fault],
    system: System,
    nats: EmbeddedNats | EmbeddedNatsCluster,
    pg: EmbeddedPostgres,
    t0: float,
    tally: _Tally,
    say,
) -> None:
    for fault in plan:
        await asyncio.sleep(max(0.0, t0 + fault.at - time.monotonic()))
        say(fault.describe())
        if fault.kind == KILL:
            system.stop_service(fault.target, sig=signal.SIGKILL)
            tally.kills += 1
            await asyncio.sleep(fault.down)
            system.start_service(fault.target)
            tally.restarts += 1
        elif fault.kind == NATS_RESTART and isinstance(nats, EmbeddedNatsCluster):
            member = nats.members[tally.nats_restarts % len(nats.members)]
            say(f"  crashing NATS server {member.url}")
            await asyncio.to_thread(member.kill)
            await asyncio.sleep(fault.down)
            await asyncio.to_thread(member.start)
            tally.nats_restarts += 1
        elif fault.kind == NATS_RESTART:
            await asyncio.to_thread(nats.stop)
            await asyncio.sleep(fault.down)
            await asyncio.to_thread(nats.start)
            tally.nats_restarts += 1
        elif fault.kind == PG_OUTAGE:
            await asyncio.to_thread(pg.stop)
            tally.pg_outages += 1
            await asyncio.sleep(fault.down)
            await asyncio.to_thread(pg.start)
        say(f"  done: {fault.kind} {fault.target}".rstrip())


async def _watch(system: System, tally: _Tally, stop: asyncio.Event, say) -> None:
    """A service that exits on its own is a finding; restart it so the run can go on."""
    while not stop.is_set():
        for name in system.check():
            tally.exits.append(name)
            say(
                f"service {name} exited by itself (code {system.processes[name].proc.returncode}); restarting"
            )
            system.processes.pop(name)
            system.start_service(name)
        await asyncio.sleep(0.5)


async def _submit(client: Client, manifests: list[dict], window: float, tally: _Tally, say) -> None:
    batches = [manifests[b : b + BATCH] for b in range(0, len(manifests), BATCH)]
    gap = window / max(1, len(batches))
    for i, batch in enumerate(batches):
        start = time.monotonic()
        uid = f"chaos/{i:05d}"
        await _retry(lambda b=batch, u=uid: client.submit(b, submitted_at=time.time(), uid=u), say, tally)
        await asyncio.sleep(max(0.0, gap - (time.monotonic() - start)))


@contextlib.asynccontextmanager
async def _projection(endpoints: Endpoints):
    """A connection to the live projection, or None while Postgres is unreachable."""
    try:
        conn = await asyncpg.connect(
            endpoints.pg_dsn, server_settings={"search_path": schema_for(endpoints.prefix)}, timeout=5
        )
    except (TimeoutError, OSError, asyncpg.PostgresError):
        yield None
        return
    try:
        yield conn
    finally:
        with contextlib.suppress(Exception):
            await conn.close()


async def _projection_state(endpoints: Endpoints) -> dict | None:
    """Jobs by status, jobs pending without reason, and the projector's checkpoint; None while unreachable."""
    async with _projection(endpoints) as conn:
        if conn is None:
            return None
        try:
            row = await conn.fetchrow(
                "SELECT count(*) AS total,"
                " count(*) FILTER (WHERE status = 'running') AS running,"
                " count(*) FILTER (WHERE status IN ('pending', 'preempted') AND reason IS NULL) AS unreasoned,"
                " (SELECT max(stream_seq) FROM checkpoints WHERE consumer = 'projector') AS checkpoint"
                " FROM jobs"
            )
            return dict(row)
        except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError):
            return None


async def _unsettled_jobs(endpoints: Endpoints, limit: int = 5) -> list[str]:
    """A few jobs the projection holds as running or reasonless, with their pods: what kept a run from settling."""
    async with _projection(endpoints) as conn:
        if conn is None:
            return []
        rows = await conn.fetch(
            "SELECT j.name, j.status, string_agg(p.idx || ':' || p.status, ' ' ORDER BY p.idx) AS pods"
            " FROM jobs j JOIN pods p ON p.job = j.name"
            " WHERE j.status = 'running' OR (j.status IN ('pending', 'preempted') AND j.reason IS NULL)"
            " GROUP BY j.name, j.status ORDER BY j.name LIMIT $1",
            limit,
        )
        return [f"unsettled in the projection: job {r['name']} {r['status']}, pods {r['pods']}" for r in rows]


CALM_SECONDS = 10  # > the lease ttl the run gives (2 s) + most standbys' start-up


async def _poll(endpoints: Endpoints, bus: NatsBus, timeout: float, every: float, say, judge) -> str | None:
    """Ask ``judge(state, last_seq)`` every ``every`` seconds, with the projection's state and the stream's
    end, until it answers True (then None) or ``timeout`` passes (then the last state seen).

    ``judge`` is only asked while Postgres answers; it may keep what it needs between calls.
    """
    deadline = time.monotonic() + timeout
    seen = "Postgres never answered"
    while time.monotonic() < deadline:
        state = await _projection_state(endpoints)
        last = await _retry(bus.last_seq, say)
        if state is not None:
            seen = f"{state} stream at {last}"
            if judge(state, last):
                return None
        await asyncio.sleep(every)
    return seen


async def _settle(endpoints: Endpoints, bus: NatsBus, expected: int, timeout: float, say) -> str | None:
    """Wait until every job is projected, none runs, each pending one has a reason, and the projector is caught up.

    None once settled; otherwise the last state seen, to say what never settled.
    """
    calm, previous, last_report = 0, -1, 0.0

    def settled(state: dict, last: int) -> bool:
        nonlocal calm, previous, last_report
        quiet = (
            state["total"] >= expected
            and state["running"] == 0
            and state["unreasoned"] == 0
            and (state["checkpoint"] or 0) >= last
            and last == previous
        )
        previous = last
        calm = calm + 1 if quiet else 0
        if time.monotonic() - last_report > 5:
            last_report = time.monotonic()
            say(f"settling: {state} stream at {last}")
        # Quiet for longer than a lease takes to lapse: a restarted allocator has had its chance.
        return calm >= CALM_SECONDS

    return await _poll(endpoints, bus, timeout, 1.0, say, settled)


WRITERS = tuple(s for s in SERVICES if s != "projector")


async def _quiesce(system: System, endpoints: Endpoints, bus: NatsBus, timeout: float, say) -> str | None:
    """Stop every service that publishes, then wait until the projector has folded the whole log.

    None once it has; otherwise the last state seen.
    """
    for name in WRITERS:
        await asyncio.to_thread(system.stop_service, name)
    return await _poll(
        endpoints, bus, timeout, 0.2, say, lambda state, last: (state["checkpoint"] or 0) >= last
    )


async def _fresh_projection_differences(endpoints: Endpoints, log: list[LoggedMessage]) -> list[str]:
    """Project the log afresh into a schema of its own and compare every table with the live projection."""
    fresh_prefix = f"{endpoints.prefix}_fresh"
    pool = await create_pool(endpoints.pg_dsn, fresh_prefix, min_size=1, max_size=2)
    try:
        sink = PostgresSink(pool)
        deliveries = [Delivery(m.subject, m.seq, m.events, data=m.data) for m in log]
        for b in range(0, len(deliveries), 1024):
            await sink.apply(deliveries[b : b + 1024])
    finally:
        await pool.close()
    conn = await asyncpg.connect(endpoints.pg_dsn)
    try:
        live, fresh = schema_for(endpoints.prefix), schema_for(fresh_prefix)
        tables = await conn.fetch(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = $1"
            " AND table_type = 'BASE TABLE' ORDER BY 1",
            live,
        )
        out = []
        for (table,) in tables:
            if table.startswith("schema_") or table == "migrations":
                continue
            columns = [
                r["column_name"]
                for r in await conn.fetch(
                    "SELECT column_name FROM information_schema.columns WHERE table_schema = $1"
                    " AND table_name = $2 ORDER BY ordinal_position",
                    live,
                    table,
                )
                if r["column_name"] not in _WALL_CLOCK_COLUMNS
            ]
            # As text: json columns (events kept verbatim) have no ordering, and text compares the same.
            select = ", ".join(f'"{c}"::text' for c in columns)
            order = ", ".join(str(i + 1) for i in range(len(columns)))
            a = await conn.fetch(f'SELECT {select} FROM "{live}"."{table}" ORDER BY {order}')
            b = await conn.fetch(f'SELECT {select} FROM "{fresh}"."{table}" ORDER BY {order}')
            rows_a, rows_b = [repr(tuple(r)) for r in a], [repr(tuple(r)) for r in b]
            if rows_a != rows_b:
                only_live = sorted(set(rows_a) - set(rows_b))[:1]
                only_fresh = sorted(set(rows_b) - set(rows_a))[:1]
                out.append(
                    f"table {table}: {len(a)} rows live, {len(b)} fresh;"
                    f" live only e.g. {only_live}, fresh only e.g. {only_fresh}"
                )
        await conn.execute(f'DROP SCHEMA IF EXISTS "{fresh}" CASCADE')
        return out
    finally:
        await conn.close()


async def _drive(
    options: ChaosOptions, system: System, nats: EmbeddedNats | EmbeddedNatsCluster, pg: EmbeddedPostgres, say
) -> ChaosResult:
    endpoints = system.endpoints
    tally = _Tally()
    result = ChaosResult()
    manifests = jobs(
        options.jobs, options.seed, min_duration=options.min_duration, max_duration=options.max_duration
    )
    plan = plan_faults(
        options.seed,
        SERVICES,
        window=options.window,
        pg_outage=options.pg_outage,
        nats_restarts=options.nats_restarts,
        kinds=options.faults,
    )
    result.faults = [f.describe() for f in plan]
    client = await Client.connect(endpoints)
    # What the run's claims rest on: the log kept on as many servers as asked for.
    stream = await client.bus.js.stream_info(endpoints.subjects.stream)
    replicas = stream.config.num_replicas or 1
    stop_watch = asyncio.Event()
    watcher = asyncio.create_task(_watch(system, tally, stop_watch, say))
    try:
        await client.register_nodes(fleet(options.nodes), tag="chaos")
        answers = await client.apply_queues(queues(options.nodes), wait=60)
        rejected = [name for name, a in answers.items() if type(a).__name__ != "QueueUpserted"]
        if rejected:
            result.violations.append(f"queues rejected: {rejected}")
        say(f"fleet of {options.nodes} nodes and queues ready; submitting {options.jobs} jobs")
        t0 = time.monotonic()
        await asyncio.gather(
            _run_faults(plan, system, nats, pg, t0, tally, say),
            _submit(client, manifests, options.window, tally, say),
        )
        say("all faults done and jobs submitted; waiting for the system to settle")
        unsettled = await _settle(endpoints, client.bus, options.jobs, options.settle_timeout, say)
        if unsettled is not None:
            result.violations.append(
                f"the system did not settle within {options.settle_timeout:g}s; last seen: {unsettled}"
            )
            result.violations += await _unsettled_jobs(endpoints)
        stop_watch.set()
        await watcher
        # A restarted allocator may take its lease after any calm (a slow start): the log is read, and
        # the projection compared with it, only once nothing but the projector is left to write.
        lagging = await _quiesce(system, endpoints, client.bus, options.settle_timeout, say)
        if lagging is not None:
            result.violations.append(f"the projector did not catch up with the log; last seen: {lagging}")
        log = await log_from_nats(client.bus)
    finally:
        stop_watch.set()
        await client.close()
    say(f"read {len(log)} messages; checking")
    report = check_log(log)
    result.violations += [str(v) for v in report.violations]
    created = {e.name for m in log for e in m.events if type(e).__name__ == "PodGroupCreated"}
    lost = sorted({m["metadata"]["name"] for m in manifests} - created)
    if lost:
        result.violations.append(f"{len(lost)} submitted jobs never grouped, e.g. {lost[:3]}")
    result.violations += [f"service {name} exited by itself" for name in tally.exits]
    differences = await _fresh_projection_differences(endpoints, log)
    result.violations += [f"projection differs from the log: {d}" for d in differences]
    replayed = replay(log, endpoints.subjects)
    if replayed.divergences:
        first = replayed.first_divergence
        result.violations.append(
            f"replay: {replayed.divergences} divergent cycles, first {first.pool} cycle {first.cycle}"
            if first
            else f"replay: {replayed.divergences} divergent cycles"
        )
    result.counts = {
        "stream replicas": replicas,
        "kills": tally.kills,
        "restarts": tally.restarts + tally.nats_restarts + tally.pg_outages,
        "nats restarts": tally.nats_restarts,
        "postgres outages": tally.pg_outages,
        "services exited": len(tally.exits),
        "submit retries": tally.submit_retries,
        **report.counts(),
        "replayed cycles": replayed.cycles,
        "replay divergences": replayed.divergences,
        "projection mismatches": len(differences),
    }
    result.counts["violations"] = len(result.violations)
    if result.violations and options.home is not None:
        # A failed run's log, for `muster replay --log` and a closer look.
        save_log(log, options.home / "chaos-log.jsonl")
        say(f"log kept in {options.home / 'chaos-log.jsonl'}")
    return result


@contextlib.contextmanager
def _environment(name: str, value: str):
    before = os.environ.get(name)
    os.environ[name] = value
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = before


def run_chaos(options: ChaosOptions, *, verbose: bool = True) -> ChaosResult:
    """One whole fault-suite run on servers and a home of its own."""
    say = _say(verbose)
    with contextlib.ExitStack() as stack:
        home = options.home or Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="muster-chaos-")))
        service_env = dict(SERVICE_ENV)
        if options.nats_servers > 1:
            nats = EmbeddedNatsCluster(home / "nats-cluster", size=options.nats_servers).start()
            # This process makes the stream (as the system starts) and the services their buckets: all
            # of them on every server.
            replicas = str(min(options.nats_servers, MAX_REPLICAS))
            stack.enter_context(_environment(REPLICAS_ENV, replicas))
            service_env[REPLICAS_ENV] = replicas
        else:
            nats = EmbeddedNats(home / "nats-server").start()
        stack.callback(lambda: nats.stop())
        pg = EmbeddedPostgres(home / "postgres").start()
        stack.callback(lambda: pg.stop())
        settings = Settings(
            home=home / "system", nats_url=nats.url, pg_dsn=pg.dsn, prefix=f"chaos{uuid.uuid4().hex[:8]}"
        )
        with running_system(settings, services=SERVICES, service_env=service_env) as system:
            say(f"system up: NATS {nats.url}, Postgres {pg.dsn}, logs in {settings.home / 'logs'}")
            return asyncio.run(_drive(options, system, nats, pg, say))


def render(result: ChaosResult) -> str:
    width = max(len(k) for k in result.counts) if result.counts else 10
    lines = ["fault plan:", *[f"  {f}" for f in result.faults], "", "counts:"]
    lines += [f"  {k:<{width}}  {v}" for k, v in result.counts.items()]
    if result.violations:
        lines += ["", f"violations ({len(result.violations)}):"]
        lines += [f"  {v}" for v in result.violations[:50]]
        if len(result.violations) > 50:
            lines.append(f"  ... and {len(result.violations) - 50} more")
    lines += ["", "PASS" if result.ok else "FAIL"]
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m muster.chaos.run", description=__doc__.split("\n\n")[0])
    d = ChaosOptions()
    p.add_argument("--jobs", type=int, default=d.jobs, help="jobs to submit (default %(default)s)")
    p.add_argument("--seed", type=int, default=d.seed, help="seed of the jobs and the fault plan")
    p.add_argument("--nodes", type=int, default=d.nodes, help="8-GPU nodes in the simulated fleet")
    p.add_argument("--window", type=float, default=d.window, help="seconds of submission and faults")
    p.add_argument("--pg-outage", type=float, default=d.pg_outage, help="seconds Postgres is down")
    p.add_argument("--settle-timeout", type=float, default=d.settle_timeout)
    p.add_argument(
        "--nats-restarts",
        type=int,
        default=d.nats_restarts,
        help="times NATS is restarted (default %(default)s)",
    )
    p.add_argument(
        "--faults",
        default=",".join(KINDS),
        help="which kinds of fault to inject, comma-separated (default %(default)s)",
    )
    p.add_argument(
        "--nats-servers",
        type=int,
        default=d.nats_servers,
        help="above 1: a JetStream cluster of that many servers, streams replicated on each, and each NATS"
        " fault crashes one member (default %(default)s)",
    )
    p.add_argument("--home", type=Path, default=None, help="keep logs and data here (default: a temp folder)")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.add_argument("--quiet", action="store_true", help="no progress on standard error")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    for name in ("jobs", "nodes", "nats_restarts", "nats_servers"):
        if getattr(args, name) < 1:
            print(f"--{name.replace('_', '-')}: must be at least 1", file=sys.stderr)
            return 2
    unknown = sorted(set(args.faults.split(",")) - set(KINDS) - {""})
    if unknown:
        print(f"--faults: unknown kinds {unknown}; known: {', '.join(KINDS)}", file=sys.stderr)
        return 2
    options = ChaosOptions(
        jobs=args.jobs,
        seed=args.seed,
        nodes=args.nodes,
        window=args.window,
        pg_outage=args.pg_outage,
        settle_timeout=args.settle_timeout,
        nats_restarts=args.nats_restarts,
        faults=tuple(k for k in args.faults.split(",") if k),
        home=args.home,
        nats_servers=args.nats_servers,
    )
    result = run_chaos(options, verbose=not args.quiet)
    if args.json:
        print(json.dumps({"counts": result.counts, "violations": result.violations, "faults": result.faults}))
    else:
        print(render(result))
    return 0 if result.ok else 1


if __name__ == "__main__":
    sys.exit(main())
