"""Against a running system: a job for a queue it does not have is refused before anything is
published, with the queue meant; an unknown job name gets the name meant.

The queue-controller, podgrouper and projector run in the test's event loop, on the test's own
stream and schema; the CLI runs as a user runs it, a process of its own.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import os
import sys
from pathlib import Path

import pytest
from muster.bus import NatsBus
from muster.runtime.settings import Endpoints, Settings
from muster.runtime.system import prepare
from muster.service import run_service
from muster.snapshots import SNAPSHOT_OWNERS, existing_stores, snapshot_bucket
from muster.store import connect

from tests.conftest import drop_schema
from tests.polling import wait_until

pytestmark = [pytest.mark.nats, pytest.mark.postgres]

SERVICES = ("queue_controller", "podgrouper", "projector")
# The controller snapshots its book after every answer: a purged stream then still says what queues exist.
SERVICE_ENV = {"MUSTER_SNAPSHOT_EVERY": "1", "MUSTER_SNAPSHOT_MIN_INTERVAL": "0"}

QUEUES = "- {name: research}\n- {name: team-a}\n"


def job(name: str, queue: str = "default-queue") -> str:
    """A one-pod muster job."""
    return (
        f"apiVersion: muster.dev/v1\nkind: Job\nmetadata: {{name: {name}}}\n"
        f"spec: {{queue: {queue}, pods: [{{count: 1, resources: {{cpu: 1}}}}]}}\n"
    )


def pod(name: str, queue: str | None = None) -> str:
    """A Kubernetes Pod whose queue is its KAI label; with none, it names no queue."""
    labels = f", labels: {{kai.scheduler/queue: {queue}}}" if queue else ""
    return f"apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}{labels}}}\nspec: {{containers: [{{name: c}}]}}\n"


class System:
    """The running services' system, as the CLI and the test see it."""

    def __init__(self, endpoints: Endpoints, bus: NatsBus, home: Path, files: Path):
        self.endpoints, self.bus, self.home, self.files = endpoints, bus, home, files

    def file(self, name: str, text: str) -> str:
        path = self.files / name
        path.write_text(text)
        return str(path)

    async def muster(self, *args: str) -> tuple[int, str, str]:
        """Run the real CLI against this system; (exit code, stdout, stderr)."""
        env = {k: v for k, v in os.environ.items() if k != "MUSTER_TENANT"}
        env.update(
            MUSTER_HOME=str(self.home),
            MUSTER_NATS_URL=self.endpoints.nats_url,
            MUSTER_PG_DSN=self.endpoints.pg_dsn,
            MUSTER_PREFIX=self.endpoints.prefix,
        )
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "muster.cli.main", *args, env=env,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        out, err = await asyncio.wait_for(proc.communicate(), 60)
        return proc.returncode, out.decode(), err.decode()

    async def events_on(self, subject: str) -> list:
        return [e async for d in self.bus.read([subject]) for e in d.events]

    async def has_job(self, name: str) -> bool:
        """Whether the job is grouped and its row projected (what `why` reads)."""
        conn = await connect(self.endpoints.pg_dsn, self.endpoints.prefix)
        try:
            return bool(await conn.fetchval("SELECT count(*) FROM jobs WHERE name = $1", name))
        finally:
            await conn.close()

    async def published(self) -> int:
        """Messages on the subjects a refused command would have published to."""
        s = self.endpoints.subjects
        subjects = [s.workloads, s.queue_requests, s.nodes("*")]
        return sum([1 async for _ in self.bus.read(subjects)])


@pytest.fixture
async def system(endpoints: Endpoints, tmp_path: Path):
    await prepare(endpoints)
    settings = Settings(
        home=tmp_path / "home",
        nats_url=endpoints.nats_url,
        pg_dsn=endpoints.pg_dsn,
        prefix=endpoints.prefix,
        extra=SERVICE_ENV,
    )
    bus = await NatsBus.connect(endpoints.nats_url, endpoints.subjects, service="test")
    stop = asyncio.Event()
    tasks = [
        asyncio.create_task(
            run_service(name, importlib.import_module(f"services.{name}.app").run, endpoints, settings, stop)
        )
        for name in SERVICES
    ]
    live = System(endpoints, bus, settings.home, tmp_path)
    try:
        await wait_until(
            lambda: live.events_on(endpoints.subjects.queues), what="the queue-controller's default queue"
        )
        yield live
    finally:
        stop.set()
        _, running = await asyncio.wait(tasks, timeout=1.0)
        for task in running:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        stream = endpoints.subjects.stream
        for owner in SNAPSHOT_OWNERS:
            with contextlib.suppress(Exception):
                await bus.js.delete_object_store(snapshot_bucket(stream, owner))
        with contextlib.suppress(Exception):
            await bus.js.delete_stream(stream)
        await bus.close()
        await drop_schema(endpoints)


async def test_submit_refuses_a_mistyped_queue_with_the_queue_meant_and_publishes_nothing(system):
    path = system.file("job.yaml", job("train"))
    code, _, err = await system.muster("submit", "-f", path, "--queue", "defualt-queue")
    assert code == 2
    assert err.strip() == 'muster submit: queue "defualt-queue" does not exist; did you mean "default-queue"?'
    assert await system.published() == 0


async def test_submit_refuses_an_unknown_queue_label_naming_the_queues_there_are(system):
    code, _, err = await system.muster("submit", "-f", system.file("pod.yaml", pod("p", "nosuch-queue")))
    assert code == 2
    assert 'queue "nosuch-queue" does not exist; the queues there are: default-queue' in err
    assert await system.published() == 0


async def test_submit_publishes_a_job_that_names_no_queue_to_a_system_with_the_default_one(system):
    code, _, err = await system.muster("submit", "-f", system.file("pod.yaml", pod("train")))
    assert code == 0, err
    assert len(await system.events_on(system.endpoints.subjects.workloads)) == 1


async def test_a_queue_made_with_queues_apply_is_accepted_at_once(system):
    code, _, err = await system.muster("queues", "apply", "-f", system.file("queues.yaml", QUEUES))
    assert code == 0, err
    code, _, err = await system.muster("submit", "-f", system.file("job.yaml", job("train", "team-a")))
    assert code == 0, err


async def test_run_refuses_a_mistyped_queue_and_publishes_nothing(system):
    code, _, err = await system.muster("run", "--queue", "default-qeueu", "--", "/bin/true")
    assert code == 2
    assert err.strip() == 'muster run: queue "default-qeueu" does not exist; did you mean "default-queue"?'
    assert await system.published() == 0


async def test_after_the_stream_is_purged_the_queues_come_from_the_controllers_snapshot(system):
    assert (await system.muster("queues", "apply", "-f", system.file("q.yaml", QUEUES)))[0] == 0
    stream = system.endpoints.subjects.stream

    async def snapshot_of_every_answer():
        stores = dict(await existing_stores(system.bus.js, stream))
        metas = (
            await stores["queue-controller"].list("queue-controller") if "queue-controller" in stores else []
        )
        return max((m.seq for m in metas), default=0) >= await system.bus.last_seq()

    await wait_until(snapshot_of_every_answer, what="a snapshot of the controller's book")
    await system.bus.js.purge_stream(stream)
    assert await system.bus.first_seq() > 1
    code, _, err = await system.muster("submit", "-f", system.file("job.yaml", job("train", "team-a")))
    assert code == 0, err
    code, _, err = await system.muster("submit", "-f", system.file("job.yaml", job("train", "team-b")))
    assert code == 2 and 'did you mean "team-a"?' in err


async def test_an_unknown_job_name_gets_the_name_meant_from_cancel_logs_and_why(system):
    assert (await system.muster("submit", "-f", system.file("job.yaml", job("train-mnist"))))[0] == 0
    await wait_until(lambda: system.has_job("train-mnist"), what="the job grouped and projected")
    for command in ("cancel", "logs", "why"):
        code, _, err = await system.muster(command, "train-mnsit")
        assert code == 1, (command, err)
        assert 'did you mean "train-mnist"?' in err, (command, err)
