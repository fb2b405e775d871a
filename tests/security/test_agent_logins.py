"""A node's own agent login, used as an attacker would: it speaks for its node, and only its node.

The server refuses a publish on another node's subjects, so it is never stored; a fact about
another node published on the login's own subjects is stored, and every reader refuses it.
"""

from __future__ import annotations

import asyncio

import nats
import pytest
from muster import events as ev
from muster.agent_logins import AgentLogin
from muster.bus.admission import Refused, admit
from muster.runtime.security import NatsAuth, NatsCredentials, agent_user, generate_password

from tests.security.conftest import SUBJECTS, LoginsServer, logins_server

pytestmark = pytest.mark.nats

AGENTS = (AgentLogin("a", generate_password()), AgentLogin("rack-1.b", generate_password()))


@pytest.fixture(scope="module")
def secured(tmp_path_factory):
    logins = {a.node: NatsCredentials(a.user, a.password) for a in AGENTS}
    auth_of = lambda passwords: NatsAuth("muster", passwords, agents=AGENTS)  # noqa: E731
    with logins_server(tmp_path_factory.mktemp("nats"), auth_of, logins) as server:
        yield server


async def stored(secured: LoginsServer, subject: str) -> list:
    bus = await secured.bus("cli")
    try:
        return [d async for d in bus.read([subject])]
    finally:
        await bus.close()


def completed(node: str, pod: int = 0) -> ev.PodCompleted:
    return ev.PodCompleted(job="j", pod=pod, node=node, pool="gpu")


async def test_a_nodes_agent_may_report_its_own_node_and_pods(secured):
    bus = await secured.bus("a")
    try:
        spec = ev.NodeSpec(name="a", pool="gpu")
        assert await bus.publish(
            SUBJECTS.node_facts("gpu", "a"), [ev.NodeRegistered(node=spec)], msg_id="a:reg"
        )
        assert await bus.publish(SUBJECTS.node_pods("gpu", "a"), [completed("a")], msg_id="a:done")
    finally:
        await bus.close()
    [delivery] = await stored(secured, SUBJECTS.node_pods("gpu", "a"))
    assert delivery.events == [completed("a")]


@pytest.mark.parametrize(
    ("subject", "events"),
    [
        (SUBJECTS.node_pods("gpu", "rack-1.b"), [completed("rack-1.b")]),  # another node's pods
        (SUBJECTS.node_facts("gpu", "rack-1.b"), [ev.NodeRemoved(name="rack-1.b", pool="gpu")]),
        (SUBJECTS.pods("gpu"), [completed("rack-1.b")]),  # the pool's subject, which names no node
        (SUBJECTS.nodes("gpu"), [ev.NodeLost(name="rack-1.b", pool="gpu")]),
        (SUBJECTS.decisions("gpu"), [ev.BindRequested(job="j", pod=0, node="a", gpus=[0], epoch=1)]),
    ],
)
async def test_a_nodes_agent_may_not_publish_for_another_node_or_the_pool(secured, subject, events):
    before = len(await stored(secured, subject))
    bus = await secured.bus("a")
    try:
        with pytest.raises(nats.errors.TimeoutError):
            await bus.publish(subject, events, msg_id=f"forged:{subject}")
    finally:
        await bus.close()
    assert len(await stored(secured, subject)) == before


async def test_a_fact_about_another_node_on_its_own_subject_is_stored_but_refused_by_every_reader(secured):
    subject = SUBJECTS.node_pods("gpu", "a")
    bus = await secured.bus("a")
    try:
        await bus.publish(subject, [completed("rack-1.b", pod=7)], msg_id="a:forged-b")
    finally:
        await bus.close()
    [forged] = [d for d in await stored(secured, subject) if d.headers.get("Nats-Msg-Id") == "a:forged-b"]
    assert forged.events == []
    with pytest.raises(
        Refused, match=r"\$\.events\[0\]\.node: 'rack-1\.b' is not the node of muster\.pods\.gpu\.a"
    ):
        admit(SUBJECTS, forged.subject, forged.data)


async def test_a_nodes_agent_may_not_answer_another_nodes_log_requests(secured):
    errors: list[Exception] = []

    async def on_error(exc: Exception) -> None:
        errors.append(exc)

    credentials = secured.login("a")
    nc = await nats.connect(
        secured.server.url, user=credentials.user, password=credentials.password, error_cb=on_error
    )
    try:
        await nc.subscribe(SUBJECTS.agent_logs("rack-1.b"))
        await nc.flush()
        await asyncio.sleep(0.2)
    finally:
        await nc.close()
    assert any("permissions violation" in str(e).lower() for e in errors)


async def test_a_nodes_agent_reads_its_replies_under_its_own_inbox(secured):
    bus = await secured.bus("rack-1.b")
    try:
        assert bus.nc.new_inbox().startswith("_INBOX.agent-rack-1_b.")
    finally:
        await bus.close()


async def test_an_agent_with_its_nodes_login_registers_heartbeats_and_leaves_on_its_nodes_subjects(
    secured, tmp_path
):
    from muster.agent.runtime import AgentConfig, run_agent
    from muster.runtime.settings import Endpoints

    spec = ev.NodeSpec(name="a", pool="agents", resources=ev.Resources(cpu=1000, memory=2**30))
    config = AgentConfig(
        node=spec, home=tmp_path, heartbeat=0.1, pods_dir=tmp_path / "pods", credentials=secured.login("a")
    )
    stop = asyncio.Event()
    running = asyncio.create_task(run_agent(config, Endpoints(secured.server.url, "", "muster"), stop))

    async def facts() -> list:
        return [e for d in await stored(secured, SUBJECTS.node_facts("agents", "a")) for e in d.events]

    for _ in range(100):
        if any(isinstance(e, ev.NodeUpdated) for e in await facts()):
            break
        await asyncio.sleep(0.1)
    stop.set()
    await asyncio.wait_for(running, 30)
    kinds = [type(e) for e in await facts()]
    assert kinds[0] is ev.NodeRegistered and ev.NodeUpdated in kinds and kinds[-1] is ev.NodeRemoved


# -- each node's snapshots in a store of its own --------------------------------------------------


def new_agent(home, node: str):
    from types import SimpleNamespace

    from muster.agent.runtime import Agent, AgentConfig

    config = AgentConfig(node=ev.NodeSpec(name=node, pool="gpu"), home=home, pods_dir=home / "pods")
    return Agent(config, SimpleNamespace(subjects=SUBJECTS))


def agent_snapshot(agent, seq: int):
    from muster import snapshots as sn
    from muster.agent import snapshot as codec

    agent.watermark = seq
    image = codec.image_of(agent)
    return sn.sealed(agent_user(agent.node), seq, image.data, digest=image.digest, format=codec.FORMAT)


async def node_store(secured: LoginsServer, who: str, node: str):
    from muster.snapshots import ObjectStoreSnapshots

    bus = await secured.bus(who)
    return bus, await ObjectStoreSnapshots.open(bus.js, SUBJECTS.stream, agent_user(node))


async def test_a_nodes_agent_may_not_write_another_nodes_snapshot_store(secured, tmp_path):
    bus_a, own = await node_store(secured, "a", "a")
    try:
        await own.put(*agent_snapshot(new_agent(tmp_path / "a", "a"), 5))
    finally:
        await bus_a.close()
    from muster.snapshots import ObjectStoreSnapshots, snapshot_bucket

    bus_b = await secured.bus("rack-1.b")
    try:
        with pytest.raises(nats.errors.TimeoutError):  # refused: not even asked about
            await ObjectStoreSnapshots.open(bus_b.js, SUBJECTS.stream, agent_user("a"))
        meta, data = agent_snapshot(new_agent(tmp_path / "forged", "a"), 9)
        bucket = snapshot_bucket(SUBJECTS.stream, agent_user("a"))
        for part in ("C.forged", "M.forged"):  # a chunk, a record: neither is stored
            with pytest.raises(nats.errors.TimeoutError):
                await bus_b.js.publish(f"$O.{bucket}.{part}", data, timeout=1.0)
    finally:
        await bus_b.close()
    bus_cli, store = await node_store(secured, "cli", "a")
    try:
        assert [m.seq for m in await store.list(agent_user("a"))] == [5]
    finally:
        await bus_cli.close()


async def test_a_nodes_agent_restores_only_its_own_nodes_snapshot_from_its_own_store(secured, tmp_path):
    from muster import snapshotting
    from muster.agent.runtime import AgentConfig, snapshot_owner
    from muster.agent.snapshot import AgentCodec
    from muster.snapshots import ObjectStoreSnapshots

    bus_a, own = await node_store(secured, "a", "a")
    try:
        for i in range(3):  # the snapshots below are of sequences the stream holds
            await bus_a.publish(SUBJECTS.node_pods("gpu", "a"), [completed("a", i)], msg_id=f"a:grow:{i}")
        last = await bus_a.last_seq()
        # The shared login's store holds a newer state of node a: it is not this login's to restore.
        bus = await secured.bus("agent")
        try:
            shared = await ObjectStoreSnapshots.open(bus.js, SUBJECTS.stream, "agent")
            await shared.put(*agent_snapshot(new_agent(tmp_path / "shared", "a"), last))
        finally:
            await bus.close()
        await own.put(*agent_snapshot(new_agent(tmp_path / "own", "a"), last - 2))
        # Its own store, under its own fold's name, holding another node's state: refused.
        await own.put(*agent_snapshot(new_agent(tmp_path / "other", "rack-1.b"), last - 1))
        config = AgentConfig(
            node=ev.NodeSpec(name="a", pool="gpu"), home=tmp_path, credentials=secured.login("a")
        )
        restarted = new_agent(tmp_path / "restarted", "a")
        _, start = await snapshotting.restored(
            bus_a, agent_user("a"), restarted, AgentCodec(), owner=snapshot_owner(config), env={}
        )
    finally:
        await bus_a.close()
    assert snapshot_owner(config) == agent_user("a")
    assert (start, restarted.watermark, restarted.log.node) == (last - 1, last - 2, "a")
