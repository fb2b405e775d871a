"""A secured live system under attack: poison and forged messages on every subject, from each login.

Every service logs in as its own NATS user and reads replies on its own inbox.
What an attacker publishes where its login may publish is dead-lettered by
each reader, once, and never applied nor projected; every service keeps
running, a restarted one rebuilds past it, and jobs submitted afterwards run.
"""

from __future__ import annotations

import uuid
from collections import Counter

import pytest
import yaml
from muster.bus import NatsBus
from muster.events import (
    BindRequested,
    DeadLettered,
    LeaderElected,
    NodeRegistered,
    NodeSpec,
    PodBound,
    QueueSpec,
    QueueUpserted,
    Resources,
)
from muster.runtime.settings import Settings
from muster.runtime.system import SERVICES, running_system

from tests.e2e.conftest import SCENARIOS, SERVICE_ENV, events_on, muster, run, status
from tests.poison import deep_envelope, raw_envelope
from tests.polling import wait_for

pytestmark = [pytest.mark.nats, pytest.mark.postgres, pytest.mark.slow]

SCENARIO = SCENARIOS / "two-queues-gang-and-fraction.yaml"


@pytest.fixture(scope="module")
def secured(tmp_path_factory, servers):
    """Every service against a NATS of its own that refuses strangers (embedded mode's default)."""
    home = tmp_path_factory.mktemp("secured")
    settings = Settings(home=home / "home", pg_dsn=servers.pg_dsn, prefix=f"t{uuid.uuid4().hex[:12]}")
    with running_system(settings, services=SERVICES, service_env=SERVICE_ENV) as system:
        assert system.logins.nats, "embedded NATS runs with a user per service"
        muster(system, "apply", "-f", str(SCENARIO))
        wait_for(
            lambda: running(system, ["gang", "notebook", "single"]), timeout=60, what="the scenario running"
        )
        yield system


def running(system, jobs: list[str]) -> bool:
    found = status(system)["jobs"]
    return all(found.get(j, {}).get("status") == "running" for j in jobs)


def submit(system, tmp_path, job: str) -> None:
    """One more one-GPU job for team-b, as a user submits it; waits until it runs."""
    scenario = yaml.safe_load(SCENARIO.read_text())
    scenario["jobs"] = [{"name": job, "queue": "team-b", "pods": [{"count": 1, "resources": {"gpu": 1}}]}]
    scenario.pop("expect")
    path = tmp_path / f"{job}.yaml"
    path.write_text(yaml.safe_dump(scenario))
    muster(system, "apply", "-f", str(path))
    wait_for(lambda: running(system, [job]) or system.check(), timeout=60, what=f"{job} running")
    assert system.check() == []


async def publish(system, user: str, subject: str, data: bytes, msg_id: str) -> int:
    """Publish ``data`` as it is, logged in as ``user``."""
    endpoints = system.endpoints
    bus = await NatsBus.connect(
        endpoints.nats_url,
        endpoints.subjects,
        service=f"attacker-{user}",
        credentials=system.logins.nats[user],
    )
    try:
        return await bus.publish_raw(subject, data, msg_id=msg_id)
    finally:
        await bus.close()


async def letters(system) -> list[DeadLettered]:
    return await events_on(system, system.endpoints.subjects.deadletter)


def lettered(system, seqs: set[int], by: str) -> bool:
    return seqs <= {letter.stream_seq for letter in run(letters(system)) if letter.service == by}


def test_nested_json_on_every_subject_is_dead_lettered_and_every_service_keeps_running(secured, tmp_path):
    s = secured.endpoints.subjects
    # Each subject with a login that may publish there.
    targets = {
        s.workloads: "framework",
        s.podgroups: "cli",
        s.queue_requests: "cli",
        s.queues: "queue-controller",
        s.queue_status: "allocator",
        s.nodes("default"): "agent",
        s.decisions("default"): "allocator",
        s.pods("default"): "agent",
        s.deadletter: "agent",
    }
    poison = {
        subject: run(publish(secured, user, subject, deep_envelope(5000), msg_id=f"deep:{subject}"))
        for subject, user in targets.items()
    }
    submit(secured, tmp_path, "after-poison")
    wait_for(lambda: lettered(secured, set(poison.values()), by="projector"), what="the projector's letters")
    assert lettered(secured, {poison[s.workloads]}, by="podgrouper")
    assert lettered(secured, {poison[s.queue_requests]}, by="queue-controller")
    assert lettered(secured, {poison[s.pods("default")], poison[s.decisions("default")]}, by="binder")

    # Restarted, each service rebuilds past the poison and letters nothing again.
    for name in ("podgrouper", "allocator", "binder", "nodewatch", "projector"):
        secured.stop_service(name)
        secured.start_service(name)
    submit(secured, tmp_path, "after-restart")
    twice = [
        key for key, n in Counter((x.service, x.stream_seq) for x in run(letters(secured))).items() if n > 1
    ]
    assert twice == []


FORGED = [
    BindRequested(job="forged-job", pod=0, node="forged-node", gpus=[0], epoch=1),
    PodBound(job="forged-job", pod=0, node="forged-node"),
    QueueUpserted(queue=QueueSpec(name="forged-queue")),
    NodeRegistered(node=NodeSpec(name="forged-node", resources=Resources(gpu=1000))),
]


def test_forged_facts_and_overflowing_values_are_neither_applied_nor_projected(secured, tmp_path):
    from muster.events import encode_envelope

    s = secured.endpoints.subjects
    seqs = [
        run(publish(secured, "framework", s.workloads, encode_envelope([e]), msg_id=f"forged:{i}"))
        for i, e in enumerate(FORGED)
    ]
    leader = LeaderElected(pool="default", epoch=2**62, holder="agent")
    seqs.append(run(publish(secured, "agent", s.pods("default"), encode_envelope([leader]), msg_id="leader")))
    unasked = BindRequested(job="notebook", pod=0, node="node-d", gpus=[3], epoch=2**30)
    seqs.append(
        run(publish(secured, "agent", s.pods("default"), encode_envelope([unasked]), msg_id="unasked"))
    )
    huge = raw_envelope(
        {"type": "PodGroupCreated", "name": "huge", "queue": "team-a", "priority": 3_000_000_000}
    )
    seqs.append(run(publish(secured, "cli", s.podgroups, huge, msg_id="huge")))

    # Nothing is fenced: the allocator still decides and the binder still binds.
    submit(secured, tmp_path, "after-forgery")
    wait_for(lambda: lettered(secured, set(seqs), by="projector"), what="the projector's letters")
    state = status(secured)
    assert not {"forged-job", "huge"} & set(state["jobs"])
    assert "forged-node" not in state["nodes"]
    assert "forged-queue" not in state["queues"]
    assert state["jobs"]["notebook"]["status"] == "running"


def test_a_node_speaking_for_a_pod_that_is_not_its_own_is_dead_lettered_by_the_allocator(secured, tmp_path):
    from muster.events import PodCompleted, encode_envelope

    s = secured.endpoints.subjects
    gang = status(secured)["jobs"]["gang"]
    node = gang["pods"][0]["node"]
    elsewhere = next(n for n in status(secured)["nodes"] if n != node)
    forgeries = [
        PodCompleted(job="gang", pod=0, node=elsewhere),
        PodBound(job="gang", pod=0, node=node, gpus=[999]),
    ]
    seqs = {
        run(publish(secured, "agent", s.pods("default"), encode_envelope([e]), msg_id=f"elsewhere:{i}"))
        for i, e in enumerate(forgeries)
    }
    wait_for(lambda: lettered(secured, seqs, by="allocator-default"), what="the allocator's letters")
    reasons = [
        x.error for x in run(letters(secured)) if x.stream_seq in seqs and x.service == "allocator-default"
    ]
    assert any(f"was placed on node {node}, not {elsewhere}" in r for r in reasons), reasons
    # The allocator goes on deciding: a job submitted afterwards runs.
    submit(secured, tmp_path, "after-elsewhere")
