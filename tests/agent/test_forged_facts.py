"""A machine agent refuses a word about a pod that its node's log refutes, and says so once."""

from __future__ import annotations

from muster import events as ev
from muster.agent.runtime import Agent, AgentConfig
from muster.bus import Delivery
from muster.bus.memory import MemoryBus
from muster.events import decode_envelope
from muster.subjects import Subjects

S = Subjects("t")
JOB = ev.PodGroupCreated(
    name="j", queue="q", pods=[ev.PodSpec(count=2, resources=ev.Resources(gpu=1), command=["true"])]
)


def delivery(seq: int, *events: ev.Event) -> Delivery:
    return Delivery(subject="t.pods.default", seq=seq, events=list(events), data=b"{}")


async def agent_with_a_bound_pod(tmp_path) -> tuple[Agent, MemoryBus]:
    """The agent of node ``a`` (2 GPUs), running pod j/0."""
    spec = ev.NodeSpec(name="a", resources=ev.Resources(gpu=2))
    bus = MemoryBus(S)
    agent = Agent(AgentConfig(node=spec, home=tmp_path, pods_dir=tmp_path / "pods"), bus)  # type: ignore[arg-type]
    bind = ev.BindRequested(job="j", pod=0, node="a", gpus=[0], epoch=0)
    await agent.handle(
        [delivery(1, JOB), delivery(2, bind), delivery(3, ev.PodBound(job="j", pod=0, node="a", gpus=[0]))],
        live=False,
    )
    return agent, bus


def letters(bus: MemoryBus) -> list[ev.DeadLettered]:
    return [e for m in bus.messages if m.subject == S.deadletter for e in decode_envelope(m.data)]


async def test_another_nodes_word_that_a_pod_running_here_ended_is_refused_and_lettered_once(tmp_path):
    agent, bus = await agent_with_a_bound_pod(tmp_path)
    await agent.handle([delivery(4, ev.PodCompleted(job="j", pod=0, node="b"))], live=True)
    [letter] = letters(bus)
    assert (letter.service, letter.stream_seq) == ("agent-a", 4)
    assert letter.error == "pod j/0 was placed on node a, not b"
    assert agent.log.placements[("j", 0)].phase == "bound" and "j" not in agent.log.finished


async def test_a_word_naming_this_node_about_a_pod_never_placed_here_changes_nothing(tmp_path):
    agent, bus = await agent_with_a_bound_pod(tmp_path)
    await agent.handle([delivery(4, ev.PodFailed(job="j", pod=1, node="a"))], live=False)
    assert letters(bus) == [] and "j" not in agent.log.finished


async def test_a_bind_here_on_a_device_past_the_nodes_last_is_refused(tmp_path):
    agent, _ = await agent_with_a_bound_pod(tmp_path)
    await agent.handle(
        [delivery(4, ev.BindRequested(job="j", pod=1, node="a", gpus=[1], epoch=0))], live=False
    )
    await agent.handle([delivery(5, ev.PodBound(job="j", pod=1, node="a", gpus=[2]))], live=False)
    assert agent.log.placements[("j", 1)].phase == "binding"


async def agent_with_a_pod_moving_here(tmp_path) -> tuple[Agent, MemoryBus]:
    """The agent of node ``a``, binding pod j/1 here (pipelined) while node ``b`` is asked to evict it."""
    agent, bus = await agent_with_a_bound_pod(tmp_path)
    await agent.handle(
        [
            delivery(4, ev.BindRequested(job="j", pod=1, node="b", gpus=[0], epoch=0)),
            delivery(5, ev.PodBound(job="j", pod=1, node="b", gpus=[0])),
            delivery(
                6,
                ev.EvictionRequested(job="j", pod=1, node="b"),
                ev.BindRequested(job="j", pod=1, node="a", gpus=[1], epoch=0, pipelined=True),
            ),
        ],
        live=False,
    )
    return agent, bus


async def test_a_third_nodes_word_that_a_pod_moving_here_ended_is_refused_and_lettered_once(tmp_path):
    agent, bus = await agent_with_a_pod_moving_here(tmp_path)
    forged = ev.PodCompleted(job="j", pod=1, node="c")
    await agent.handle([delivery(7, forged), delivery(8, ev.PodEvicted(job="j", pod=1, node="c"))], live=True)
    assert [(e.stream_seq, e.error) for e in letters(bus)] == [
        (7, "pod j/1 was placed on node b, not c"),
        (8, "pod j/1 was placed on node b, not c"),
    ]
    await agent.handle([delivery(7, forged)], live=False)  # read again after a restart
    assert len(letters(bus)) == 2
    assert agent.log.placements[("j", 1)].phase == "binding" and "j" not in agent.log.finished


async def test_another_nodes_word_that_a_pod_being_bound_here_ended_is_refused(tmp_path):
    agent, bus = await agent_with_a_bound_pod(tmp_path)
    await agent.handle(
        [delivery(4, ev.BindRequested(job="j", pod=1, node="a", gpus=[1], epoch=0, pipelined=True))],
        live=False,
    )
    await agent.handle([delivery(5, ev.PodFailed(job="j", pod=1, node="b"))], live=True)
    assert [e.error for e in letters(bus)] == ["pod j/1 was placed on node a, not b"]
    assert "j" not in agent.log.finished


async def test_the_node_a_pod_moves_from_may_say_it_let_go_or_that_it_ended(tmp_path):
    agent, bus = await agent_with_a_pod_moving_here(tmp_path)
    await agent.handle([delivery(7, ev.PodEvicted(job="j", pod=1, node="b"))], live=True)
    assert letters(bus) == [] and agent.log.held_by(("j", 1)) == "a"
    agent, bus = await agent_with_a_pod_moving_here(tmp_path)
    await agent.handle([delivery(7, ev.PodCompleted(job="j", pod=1, node="b"))], live=True)
    assert letters(bus) == [] and agent.log.placements[("j", 1)].phase == "gone"
