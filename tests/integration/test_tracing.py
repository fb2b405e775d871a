"""One trace per job: submission, grouping, the allocator's decision and the bind, across services."""

from __future__ import annotations

import asyncio

import pytest
from muster.events import NodeRegistered, NodeSpec, QueueSpec, Resources
from muster.grouping.muster_job import manifest
from muster.runtime.settings import Settings
from muster.sdk import Client
from muster.service import run_service
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from services.allocator.app import run as allocator
from services.binder.app import run as binder
from services.podgrouper.app import run as podgrouper
from services.queue_controller.app import run as queue_controller

pytestmark = [pytest.mark.nats, pytest.mark.slow]

EXPORTER = InMemorySpanExporter()


@pytest.fixture(scope="module", autouse=True)
def in_memory_tracing():
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(EXPORTER))
    trace.set_tracer_provider(provider)
    yield
    EXPORTER.clear()


async def test_a_jobs_spans_from_every_service_share_one_trace(endpoints, tmp_path):
    settings = Settings(
        home=tmp_path, nats_url=endpoints.nats_url, pg_dsn=endpoints.pg_dsn, prefix=endpoints.prefix
    )
    stop = asyncio.Event()
    services = [
        asyncio.create_task(run_service(name, fn, endpoints, settings, stop))
        for name, fn in (("queue-controller", queue_controller), ("podgrouper", podgrouper),
                         ("allocator", allocator), ("binder", binder))
    ]  # fmt: skip
    client = await Client.connect(endpoints)
    try:
        await client.bus.publish(
            endpoints.subjects.nodes("default"),
            [NodeRegistered(node=NodeSpec(name="n1", resources=Resources(gpu=4, cpu=8000, memory=2**35)))],
            msg_id="node",
        )
        await client.apply_queues([QueueSpec(name="team")])
        await client.submit(
            [manifest({"name": "traced", "queue": "team", "pods": [{"count": 2, "resources": {"gpu": 1}}]})]
        )

        def spans_of_the_job():
            submit = [s for s in EXPORTER.get_finished_spans() if s.name == "submit"]
            if not submit:
                return []
            trace_id = submit[0].context.trace_id
            return [s for s in EXPORTER.get_finished_spans() if s.context.trace_id == trace_id]

        for _ in range(200):
            names = {s.name for s in spans_of_the_job()}
            if {"submit", "podgrouper.group", "allocator.decide", "binder.confirm"} <= names:
                break
            await asyncio.sleep(0.05)
        spans = spans_of_the_job()
        assert {"submit", "podgrouper.group", "allocator.decide", "binder.confirm"} <= {s.name for s in spans}
        decide = next(s for s in spans if s.name == "allocator.decide")
        assert decide.attributes["muster.job"] == "traced" and decide.attributes["muster.nodes"] == ("n1",)
        cycle_ids = {s.context.span_id for s in EXPORTER.get_finished_spans() if s.name == "allocator.cycle"}
        assert {link.context.span_id for link in decide.links} <= cycle_ids and decide.links
    finally:
        stop.set()
        await asyncio.gather(*services)
        await client.close()
