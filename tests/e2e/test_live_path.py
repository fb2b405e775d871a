"""The whole live path over real NATS and Postgres: apply → group → allocate → bind → project."""

from __future__ import annotations

import signal

import pytest
from muster.bus import NatsBus
from muster.events import decode_envelope

from tests.e2e.conftest import SCENARIOS, muster, projected, run, status
from tests.polling import wait_for

pytestmark = [pytest.mark.nats, pytest.mark.postgres, pytest.mark.slow]

SCENARIO = SCENARIOS / "two-queues-gang-and-fraction.yaml"


class Waiting(dict):
    """A status that is not there yet: falsy, but shown when the wait times out."""

    def __bool__(self) -> bool:
        return False


def all_running(system, jobs):
    state = status(system)
    if all(state["jobs"].get(j, {}).get("status") == "running" for j in jobs):
        return state
    return Waiting(
        jobs={k: (v["status"], v["reason"]) for k, v in state["jobs"].items()}, dead=system.check()
    )


async def stream_event_count(system) -> int:
    bus = await NatsBus.connect(system.endpoints.nats_url, system.endpoints.subjects, service="test")
    try:
        return sum([len(d.events) async for d in bus.read()])
    finally:
        await bus.close()


async def events_on(system, subject: str) -> int:
    bus = await NatsBus.connect(system.endpoints.nats_url, system.endpoints.subjects, service="test")
    try:
        return sum([len(d.events) async for d in bus.read([subject])])
    finally:
        await bus.close()


def events_table(system):
    return run(
        projected(system, "SELECT stream_seq, idx, type, payload::text FROM events ORDER BY stream_seq, idx")
    )


def test_applied_scenario_ends_with_every_job_bound_and_visible_in_status(live):
    muster(live, "apply", "-f", str(SCENARIO))
    state = wait_for(lambda: all_running(live, ["gang", "notebook", "single"]), what="all jobs running")
    gang = state["jobs"]["gang"]
    assert len(gang["pods"]) == 4 and all(len(p["gpus"]) == 2 for p in gang["pods"])
    notebook = state["jobs"]["notebook"]["pods"]
    assert len(notebook) == 1 and len(notebook[0]["gpus"]) == 1
    used = sum(n["total"]["gpu"] - n["free"]["gpu"] for n in state["nodes"].values())
    assert used == pytest.approx(9.5)


def test_postgres_holds_every_event_of_the_stream_exactly_once(live):
    muster(live, "apply", "-f", str(SCENARIO))
    wait_for(lambda: all_running(live, ["gang", "notebook", "single"]), what="all jobs running")

    def caught_up():
        rows = events_table(live)
        return rows if len(rows) == run(stream_event_count(live)) else None

    rows = wait_for(caught_up, what="projector caught up with the stream")
    keys = [(r["stream_seq"], r["idx"]) for r in rows]
    assert len(keys) == len(set(keys))
    types = [r["type"] for r in rows]
    assert types.count("PodBound") == 6
    assert types.count("PodGroupCreated") == 3


def test_projector_killed_mid_stream_and_restarted_leaves_the_same_rows(live):
    muster(live, "apply", "-f", str(SCENARIO))
    live.stop_service("projector", sig=signal.SIGKILL)
    wait_for(lambda: all_running_in_stream(live), what="all binds on the stream")
    live.start_service("projector")

    def caught_up():
        rows = events_table(live)
        return rows if len(rows) == run(stream_event_count(live)) else None

    before = wait_for(
        caught_up,
        timeout=60,
        what="projector caught up after restart (unacked messages return after ack_wait)",
    )
    live.stop_service("projector", sig=signal.SIGKILL)
    live.start_service("projector")
    state = wait_for(
        lambda: all_running(live, ["gang", "notebook", "single"]), what="status after second restart"
    )
    after = events_table(live)
    assert [tuple(r) for r in after] == [tuple(r) for r in before]
    assert state["jobs"]["gang"]["status"] == "running"


def all_running_in_stream(system) -> bool:
    async def bound() -> int:
        bus = await NatsBus.connect(system.endpoints.nats_url, system.endpoints.subjects, service="test")
        try:
            return sum([sum(1 for e in d.events if type(e).__name__ == "PodBound") async for d in bus.read()])
        finally:
            await bus.close()

    return run(bound()) == 6


CONSUMED = ("workloads", "queue_requests", "podgroups", "nodes", "decisions", "pods")


def test_malformed_messages_on_every_consumed_subject_are_dead_lettered_and_services_go_on(live):
    subjects = live.endpoints.subjects
    targets = [t("default") if callable(t) else t for t in (getattr(subjects, name) for name in CONSUMED)]
    bad = b'{"events": [{"type": "PodBound", "job": ["not", "a", "name"]}]}'

    async def publish_bad() -> None:
        bus = await NatsBus.connect(live.endpoints.nats_url, subjects, service="test")
        try:
            for target in targets:
                await bus.publish_raw(target, bad, msg_id=f"bad-{target}")
        finally:
            await bus.close()

    run(publish_bad())
    muster(live, "apply", "-f", str(SCENARIO))
    wait_for(lambda: all_running(live, ["gang", "notebook", "single"]), what="jobs bound after bad messages")

    def lettered():
        rows = run(projected(live, "SELECT service, subject, error, data FROM dead_letters"))
        return rows if {r["subject"] for r in rows} == set(targets) else None

    letters = wait_for(lettered, what="a dead letter for every subject")
    assert all("$.events[0].job" in r["error"] and bytes(r["data"]) == bad for r in letters)
    assert live.check() == []


def test_queue_controller_rejects_an_unknown_parent_naming_the_field(live, tmp_path):
    queues = tmp_path / "queues.yaml"
    queues.write_text("- {name: orphan, parent: nowhere}\n- {name: ok}\n")
    result = muster(live, "queues", "apply", "-f", str(queues), check=False)
    assert result.returncode == 1
    assert "orphan: rejected: parent" in result.stdout and "nowhere" in result.stdout
    assert "ok: applied" in result.stdout


def test_submitted_framework_manifest_is_grouped_and_bound_as_a_gang(live, tmp_path):
    manifest = tmp_path / "pytorch.yaml"
    manifest.write_text(
        """
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: mnist}
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      template: {spec: {containers: [{name: m, resources: {limits: {nvidia.com/gpu: 1}}}]}}
    Worker:
      replicas: 3
      template: {spec: {containers: [{name: w, resources: {limits: {nvidia.com/gpu: 1}}}]}}
"""
    )
    nodes = tmp_path / "fleet.yaml"
    nodes.write_text(
        "name: fleet\nnodes:\n  - {name: n1, resources: {gpu: 2, cpu: 16, memory: 64Gi}}\n"
        "  - {name: n2, resources: {gpu: 2, cpu: 16, memory: 64Gi}}\nqueues: []\njobs: []\n"
    )
    muster(live, "apply", "-f", str(nodes))
    muster(live, "submit", "-f", str(manifest))
    state = wait_for(lambda: all_running(live, ["mnist"]), what="pytorch job running")
    assert sorted(p["node"] for p in state["jobs"]["mnist"]["pods"]) == ["n1", "n1", "n2", "n2"]
    assert state["jobs"]["mnist"]["queue"] == "default-queue"


def test_submitting_a_bad_manifest_names_the_field_and_publishes_nothing(live, tmp_path):
    manifest = tmp_path / "bad.yaml"
    manifest.write_text(
        "apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata: {name: bad}\n"
        "spec: {pytorchReplicaSpecs: {Worker: {replicas: -2, template: {spec: {containers: []}}}}}\n"
    )
    result = muster(live, "submit", "-f", str(manifest), check=False)
    assert result.returncode == 2
    assert "spec.pytorchReplicaSpecs.Worker.replicas" in result.stderr
    assert run(events_on(live, live.endpoints.subjects.workloads)) == 0


def test_events_on_the_stream_decode_with_the_published_schemas(live):
    muster(live, "apply", "-f", str(SCENARIO))
    wait_for(lambda: all_running(live, ["gang", "notebook", "single"]), what="all jobs running")

    async def decode_all() -> int:
        bus = await NatsBus.connect(live.endpoints.nats_url, live.endpoints.subjects, service="test")
        try:
            n = 0
            async for d in bus.read():
                msg = await bus.js.get_msg(live.endpoints.subjects.stream, d.seq)
                n += len(decode_envelope(msg.data))
            return n
        finally:
            await bus.close()

    assert run(decode_all()) > 0
