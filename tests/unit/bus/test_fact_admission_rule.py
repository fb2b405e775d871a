"""The rule every fold applies to a node's word about a pod (``muster.fact_admission``)."""

from __future__ import annotations

from dataclasses import dataclass, field

from muster import events as ev
from muster.fact_admission import NOWHERE, UNCHECKED, refusal


@dataclass
class Facts:
    """A fold's answers, as tables: what is absent is not known."""

    jobs: dict[str, int] = field(default_factory=lambda: {"j": 2})
    placed: dict[tuple[str, int], str] = field(default_factory=lambda: {("j", 0): "a", ("j", 1): NOWHERE})
    nodes: dict[str, int] = field(default_factory=lambda: {"a": 4, "b": 8})

    def pods_of(self, job: str) -> int | None:
        return self.jobs.get(job)

    def placed_on(self, job: str, pod: int, node: str) -> str | None:
        return self.placed.get((job, pod))

    def devices_of(self, node: str) -> int | None:
        return self.nodes.get(node)


def bound(pod: int = 0, node: str = "a", gpus: list[int] | None = None, job: str = "j") -> ev.PodBound:
    return ev.PodBound(job=job, pod=pod, node=node, gpus=[0] if gpus is None else gpus, at=1.0)


def test_a_bind_the_state_agrees_with_is_admitted():
    assert refusal(Facts(), bound()) is None
    assert refusal(Facts(), bound(pod=1, node="b", gpus=[6, 7])) is None


def test_a_pod_its_job_does_not_have_is_refused():
    assert refusal(Facts(), ev.PodCompleted(job="j", pod=2, node="a")) == "pod j/2: job j has 2 pod(s)"


def test_another_nodes_word_about_a_placed_pod_is_refused():
    assert (
        refusal(Facts(), ev.PodCompleted(job="j", pod=0, node="b")) == "pod j/0 was placed on node a, not b"
    )
    assert refusal(Facts(), bound(node="b")) == "pod j/0 was placed on node a, not b"


def test_a_pod_waiting_to_be_placed_cannot_end_but_may_be_bound_or_evicted():
    assert refusal(Facts(), ev.PodFailed(job="j", pod=1, node="b")) == ("pod j/1 is not running on node b")
    assert refusal(Facts(), ev.PodEvicted(job="j", pod=1, node="b")) is None
    assert refusal(Facts(), bound(pod=1, node="b")) is None


def test_a_bind_on_a_node_never_registered_or_past_its_last_device_or_on_one_device_twice_is_refused():
    assert refusal(Facts(), bound(pod=1, node="x")) == "pod j/1: node x is not registered"
    assert refusal(Facts(), bound(gpus=[4])) == "pod j/0: device 4 is past the last of node a's 4 GPUs"
    assert refusal(Facts(), bound(gpus=[1, 1])) == "pod j/0: devices [1, 1] name one device twice"


def test_what_the_fold_does_not_know_it_does_not_refuse():
    unknown = Facts(jobs={}, placed={}, nodes={})
    unknown.devices_of = lambda node: UNCHECKED  # type: ignore[method-assign]
    assert refusal(unknown, bound(pod=9, node="x", gpus=[3000])) is None
    assert refusal(unknown, ev.PodCompleted(job="gone", pod=0, node="x")) is None
    assert refusal(unknown, bound(gpus=[2, 2])) is not None  # the message says that much by itself


def test_events_that_are_not_a_nodes_word_about_a_pod_are_never_refused():
    assert refusal(Facts(), ev.NodeRemoved(name="x")) is None
    assert refusal(Facts(), ev.BindRequested(job="j", pod=7, node="x", gpus=[99], epoch=1)) is None
