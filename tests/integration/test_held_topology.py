"""Against NATS: a KAI Topology submitted on its own is held by the podgrouper service (kai-semantics.md
§18); a later submission names it, and so does one after the podgrouper restarts, which reads its
declarations back from the log, or from its snapshot once the stream has been purged."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from pathlib import Path

import pytest
import yaml
from muster.bus import NatsBus
from muster.events import PodGroupCreated, Topology, TopologyDeclared, WorkloadSubmitted
from muster.runtime.settings import Endpoints, Settings
from muster.runtime.system import prepare
from muster.service import run_service
from muster.snapshots import existing_stores, snapshot_bucket

from services.podgrouper.app import run as podgrouper
from tests.conftest import drop_schema
from tests.integration.test_cli_door import system  # noqa: F401  (the running services)
from tests.polling import wait_until
from tests.unit.podgrouper.support import NETWORK_TOPOLOGY

pytestmark = [pytest.mark.nats, pytest.mark.postgres]

RACK, HOST = "accelerator.nvidia.com/rack", "kubernetes.io/hostname"


def job(name: str, level: str) -> str:
    return f"""
apiVersion: batch/v1
kind: Job
metadata:
  name: {name}
  annotations: {{kai.scheduler/topology: network, kai.scheduler/topology-required-placement: {level}}}
spec: {{template: {{spec: {{containers: [{{name: c, resources: {{requests: {{cpu: 100m}}}}}}]}}}}}}
"""


class Podgrouper:
    """The podgrouper service alone, which a test stops and starts again."""

    def __init__(self, endpoints: Endpoints, settings: Settings):
        self.endpoints, self.settings = endpoints, settings
        self.stop = asyncio.Event()
        self.task: asyncio.Task | None = None

    def start(self) -> None:
        self.stop = asyncio.Event()
        self.task = asyncio.create_task(
            run_service("podgrouper", podgrouper, self.endpoints, self.settings, self.stop)
        )

    async def halt(self) -> None:
        self.stop.set()
        if self.task is not None:
            _, running = await asyncio.wait([self.task], timeout=5.0)
            for task in running:
                task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self.task


@pytest.fixture
async def bus_and_podgrouper(endpoints: Endpoints, tmp_path: Path):
    await prepare(endpoints)
    settings = Settings(
        home=tmp_path / "home", nats_url=endpoints.nats_url, pg_dsn=endpoints.pg_dsn, prefix=endpoints.prefix
    )
    bus = await NatsBus.connect(endpoints.nats_url, endpoints.subjects, service="test")
    service = Podgrouper(endpoints, settings)
    service.start()
    try:
        yield bus, service
    finally:
        await service.halt()
        with contextlib.suppress(Exception):
            await bus.js.delete_object_store(snapshot_bucket(endpoints.subjects.stream, "podgrouper"))
        with contextlib.suppress(Exception):
            await bus.js.delete_stream(endpoints.subjects.stream)
        await bus.close()
        await drop_schema(endpoints)


async def submit(bus: NatsBus, uid: str, text: str) -> None:
    manifests = [d for d in yaml.safe_load_all(text) if d is not None]
    await bus.publish(bus.subjects.workloads, [WorkloadSubmitted(uid=uid, manifests=manifests)], msg_id=uid)


async def group_named(bus: NatsBus, name: str) -> PodGroupCreated:
    async def found():
        return [
            e
            async for d in bus.read([bus.subjects.podgroups])
            for e in d.events
            if isinstance(e, PodGroupCreated) and e.name == name
        ]

    [group] = await wait_until(found, what=f"group {name}")
    return group


async def test_a_topology_submitted_first_is_named_by_later_submissions_across_a_restart(bus_and_podgrouper):
    bus, service = bus_and_podgrouper
    await submit(bus, "topology", NETWORK_TOPOLOGY)
    await submit(bus, "first", job("first", "rack"))
    first = await group_named(bus, "first")
    assert first.topology == Topology(name="network", levels=(RACK, HOST), required=RACK)

    await service.halt()
    service.start()
    await submit(bus, "second", job("second", "node"))
    second = await group_named(bus, "second")
    assert second.topology == Topology(name="network", levels=(RACK, HOST), required=HOST)
    declared = [e async for d in bus.read([bus.subjects.topologies]) for e in d.events]
    assert [type(e) for e in declared] == [TopologyDeclared]  # declared once, read back after the restart


async def test_a_restarted_podgrouper_holds_a_topology_whose_declaration_the_stream_no_longer_has(
    bus_and_podgrouper,
):
    bus, service = bus_and_podgrouper
    await service.halt()
    service.settings = dataclasses.replace(
        service.settings, extra={"MUSTER_SNAPSHOT_EVERY": "1", "MUSTER_SNAPSHOT_MIN_INTERVAL": "0"}
    )
    service.start()
    await submit(bus, "topology", NETWORK_TOPOLOGY)

    async def snapshot_past_the_declaration():
        stores = dict(await existing_stores(bus.js, bus.subjects.stream))
        metas = await stores["podgrouper"].list("podgrouper") if "podgrouper" in stores else []
        declarations = [d.seq async for d in bus.read([bus.subjects.topologies])]
        return declarations and max((m.seq for m in metas), default=0) >= declarations[-1]

    await wait_until(snapshot_past_the_declaration, what="a snapshot of the held topology")
    await service.halt()
    await bus.js.purge_stream(bus.subjects.stream)
    service.start()
    await submit(bus, "after", job("after", "rack"))
    after = await group_named(bus, "after")
    assert after.topology == Topology(name="network", levels=(RACK, HOST), required=RACK)


async def test_muster_submit_of_a_topology_then_of_a_workload_naming_it(system):  # noqa: F811
    code, out, err = await system.muster("submit", "-f", system.file("topology.yaml", NETWORK_TOPOLOGY))
    assert code == 0, err
    assert "declared topology network" in out
    held = await wait_until(
        lambda: system.events_on(system.endpoints.subjects.topologies), what="the declaration"
    )
    assert [e.name for e in held] == ["network"]
    code, _, err = await system.muster("submit", "-f", system.file("job.yaml", job("ranked", "rack")))
    assert code == 0, err
    await wait_until(lambda: system.has_job("ranked"), what="the ranked job")
    [group] = [
        e
        for e in await system.events_on(system.endpoints.subjects.podgroups)
        if isinstance(e, PodGroupCreated)
    ]
    assert group.topology == Topology(name="network", levels=(RACK, HOST), required=RACK)


async def test_muster_submit_refuses_a_level_the_held_topology_lacks_and_publishes_nothing(system):  # noqa: F811
    assert (await system.muster("submit", "-f", system.file("t.yaml", NETWORK_TOPOLOGY)))[0] == 0
    await wait_until(lambda: system.events_on(system.endpoints.subjects.topologies), what="the declaration")
    before = await system.published()
    code, _, err = await system.muster("submit", "-f", system.file("job.yaml", job("ranked", "zone")))
    assert code != 0
    assert "metadata.annotations.kai.scheduler/topology-required-placement" in err and "'zone'" in err
    assert await system.published() == before
