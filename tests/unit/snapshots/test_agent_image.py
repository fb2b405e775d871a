"""A machine agent's image: restored anywhere in a log, folding on gives what folding from the start gives."""

from __future__ import annotations

import asyncio
from dataclasses import fields
from types import SimpleNamespace

import pytest
from muster import events as ev
from muster.agent import snapshot as codec
from muster.agent.plan import NodeLog, decide
from muster.agent.runtime import Agent, AgentConfig
from muster.bus import Delivery
from muster.snapshotting import ImageError
from muster.subjects import Subjects

from tests.unit.snapshots.logs import agent_run, digests_under_two_hash_seeds

S = Subjects("muster")
SUBJECTS = [S.podgroups, S.nodes("default"), S.decisions("default"), S.pods("default")]


def agent_messages():
    return agent_run(SUBJECTS)


@pytest.fixture(scope="module")
def messages():
    return agent_messages()


def new_agent(home, node: str = "gpu-00") -> Agent:
    spec = ev.NodeSpec(name=node, resources=ev.Resources(gpu=8))
    config = AgentConfig(node=spec, home=home, pods_dir=home / "pods")
    return Agent(config, SimpleNamespace(subjects=S))


def fold(agent: Agent, messages) -> Agent:
    deliveries = [Delivery(subject=m.subject, seq=m.seq, events=m.events) for m in messages]
    if deliveries:
        asyncio.run(agent.handle(deliveries, live=False))
    return agent


@pytest.mark.parametrize("node", ["gpu-00", "gpu-01"])
@pytest.mark.parametrize("split", [0.0, 0.2, 0.5, 0.8, 1.0])
def test_an_agent_restored_mid_log_ends_with_the_image_of_one_from_the_start(tmp_path, messages, node, split):
    k = int(len(messages) * split)
    restored = new_agent(tmp_path / "a", node)
    image = codec.image_of(fold(new_agent(tmp_path / "b", node), messages[:k]))
    codec.restore_image(restored, image.data, image.digest)
    fold(restored, messages[k:])
    whole = fold(new_agent(tmp_path / "c", node), messages)
    assert codec.image_of(restored) == codec.image_of(whole)
    assert (restored.rank0, restored.addresses) == (whole.rank0, whole.addresses)


@pytest.mark.parametrize("split", [0.3, 0.6, 1.0])
def test_an_agent_restored_mid_log_asks_for_what_one_from_the_start_asks(tmp_path, messages, split):
    k = int(len(messages) * split)
    restored = new_agent(tmp_path / "a")
    codec.restore_image(restored, codec.image_of(fold(new_agent(tmp_path / "b"), messages[:k])).data)
    whole = fold(new_agent(tmp_path / "c"), messages[:k])
    assert decide(restored.log, {}, clock=1e12, default_grace=30) == decide(
        whole.log, {}, clock=1e12, default_grace=30
    )


def test_the_log_places_pods_on_the_node_and_one_more_the_agent_owes(tmp_path, messages):
    agent = fold(new_agent(tmp_path), messages)
    assert len(agent.log.placements) > 5 and agent.log.finished
    assert decide(agent.log, {}, clock=1e12, default_grace=30)  # the late bind: start it


def test_a_snapshot_of_another_node_is_refused(tmp_path):
    with pytest.raises(ImageError, match="node 'gpu-01'"):
        codec.restore_image(
            new_agent(tmp_path / "a"), codec.image_of(new_agent(tmp_path / "b", "gpu-01")).data
        )


def test_an_image_that_does_not_match_its_digest_is_refused(tmp_path, messages):
    agent = fold(new_agent(tmp_path / "a"), messages[:40])
    before = codec.image_of(agent)
    with pytest.raises(ImageError, match="digest"):
        codec.restore_image(agent, codec.image_of(new_agent(tmp_path / "b")).data, "0" * 64)
    assert codec.image_of(agent) == before


def test_every_attribute_is_imaged_or_said_why_not(tmp_path):
    imaged = set(codec.AgentImage.__struct_fields__) | {"log"}
    assert set(vars(new_agent(tmp_path))) - set(codec.NOT_IMAGED) == imaged
    fence = {"epochs", "refused_elections", "last_refused"}
    assert {f.name for f in fields(NodeLog)} == set(codec.NodeLogImage.__struct_fields__) - fence | {"fence"}


def test_the_digest_does_not_depend_on_the_process_string_hashing(tmp_path):
    script = (
        "from pathlib import Path\n"
        "from tests.unit.snapshots.test_agent_image import agent_messages, fold, new_agent\n"
        "from muster.agent import snapshot as codec\n"
        f"print(codec.image_of(fold(new_agent(Path({str(tmp_path)!r})), agent_messages())).digest)\n"
    )
    assert len(digests_under_two_hash_seeds(script)) == 1
