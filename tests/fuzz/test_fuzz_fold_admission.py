"""Every fold checks a node's word about a pod against its state: a forged fact changes nothing.

A recorded history is folded twice by each fold (allocator, binder, node monitor, a machine agent),
once as it was and once with forged pod facts slipped into its messages: facts that decode and pass
bus admission, but that the log refutes (a device past the node's last GPU, a node never registered,
a pod its job does not have, another node's word about a pod placed elsewhere). The folds must end in
the same state either way (a snapshot's digest is the state's), raise nothing, and refuse the same
facts each time. The projector checks them against where its projection has each pod: the pods'
rows it plans must be the same either way.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from muster import events as ev
from muster.agent import snapshot as agent_image
from muster.agent.runtime import Agent, AgentConfig
from muster.bounds import MAX_NODE_GPUS, MAX_PODS_PER_GROUP
from muster.bus import Delivery
from muster.bus.admission import admit
from muster.bus.memory import MemoryBus
from muster.events import encode_envelope
from muster.fleet.sim import SimFleet
from muster.nodes import snapshot as watch_image
from muster.nodes.watch import NodeWatch
from muster.replay import load_log
from muster.scheduler import snapshot as allocator_image
from muster.scheduler.config import AllocatorConfig
from muster.scheduler.engine import Allocator
from muster.scheduler.fold import AllocatorFold
from muster.store.convert import FINISHED_POD_STATUSES
from muster.store.facts import ProjectedFacts
from muster.store.sink import prepare
from muster.subjects import Subjects

from services.binder import snapshot as binder_image
from services.binder.handlers import BinderHandlers

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "demo-4-nodes-30-jobs.jsonl"
LOG = [m for m in load_log(GOLDEN) if m.events]
S = Subjects("muster")

NODES = {
    e.node.name: int(e.node.resources.gpu)
    for m in LOG
    for e in m.events
    if isinstance(e, ev.NodeRegistered | ev.NodeUpdated)
}
JOBS = {
    e.name: sum(p.count for p in e.pods) for m in LOG for e in m.events if isinstance(e, ev.PodGroupCreated)
}
AGENT_NODE = sorted(NODES)[0]
INTRUDER = "intruder-0"  # never registered, never given a pod

job_pods = st.sampled_from(sorted(JOBS)).flatmap(lambda j: st.tuples(st.just(j), st.integers(0, JOBS[j] - 1)))
node_devices = st.sampled_from(sorted(NODES)).flatmap(
    lambda n: st.tuples(st.just(n), st.integers(NODES[n], MAX_NODE_GPUS - 1))
)


@st.composite
def device_past_the_node(draw) -> ev.Event:
    (job, pod), (node, device) = draw(job_pods), draw(node_devices)
    return ev.PodBound(job=job, pod=pod, node=node, gpus=[device], at=1.0)


@st.composite
def node_never_registered(draw) -> ev.Event:
    job, pod = draw(job_pods)
    return ev.PodBound(job=job, pod=pod, node=INTRUDER, gpus=[0], at=1.0)


@st.composite
def pod_its_job_lacks(draw) -> ev.Event:
    job = draw(st.sampled_from(sorted(JOBS)))
    pod = draw(st.integers(JOBS[job], MAX_PODS_PER_GROUP - 1))
    node = draw(st.sampled_from(sorted(NODES)))
    kind = draw(st.sampled_from([ev.PodCompleted, ev.PodFailed, ev.PodEvicted]))
    return kind(job=job, pod=pod, node=node)


@st.composite
def another_nodes_word(draw) -> ev.Event:
    job, pod = draw(job_pods)
    kind = draw(st.sampled_from([ev.PodCompleted, ev.PodFailed, ev.PodEvicted]))
    return kind(job=job, pod=pod, node=INTRUDER)


# What each fold's state can refute (``muster.fact_admission``), or ignores (the binder's fleet, whose
# state runs ahead of the log on its own confirmations, takes a pod's end only from the node that runs
# it); an agent knows where its own
# node's pods are, not where others' are, and keeps every node's word that a pod finished.
EVERY_FORGERY = st.one_of(
    device_past_the_node(), node_never_registered(), pod_its_job_lacks(), another_nodes_word()
)
AGENT_FORGERY = st.one_of(device_past_the_node(), node_never_registered(), pod_its_job_lacks())


POD_MESSAGES = [i for i, m in enumerate(LOG) if m.subject == S.pods("default")]


def forged_log(slipped: list[tuple[int, ev.Event]]) -> list[Delivery]:
    """The history, with each forged fact appended to a message of pod facts (where a node may say it),
    every message as every reader admits it (``muster.bus.admission``)."""
    extra: dict[int, list[ev.Event]] = {}
    for index, event in slipped:
        extra.setdefault(POD_MESSAGES[index % len(POD_MESSAGES)], []).append(event)
    out = []
    for i, m in enumerate(LOG):
        events = [*m.events, *extra.get(i, [])]
        if i in extra:
            events = admit(S, m.subject, encode_envelope(events))
        out.append(Delivery(subject=m.subject, seq=m.seq, events=events))
    return out


def plain_log() -> list[Delivery]:
    return forged_log([])


def slips(forgery) -> st.SearchStrategy:
    return st.lists(st.tuples(st.integers(0, len(LOG) - 1), forgery), min_size=1, max_size=12)


# -- the folds ------------------------------------------------------------------------------------


def allocator_fold(deliveries: list[Delivery]) -> tuple[str, list]:
    fold = AllocatorFold(Allocator(AllocatorConfig(), frozenset({"default"})), "default")
    refused = []
    for d in deliveries:
        fold.fold(d.seq, d.events)
        refused += fold.refusals
        fold.refusals.clear()
        if d.seq % 25 == 0:
            fold.cycle(float(d.seq), epoch=fold.log_epoch)
    fold.cycle(1e9, epoch=fold.log_epoch)
    return allocator_image.digest_of(fold), refused


def binder_fold(deliveries: list[Delivery]) -> tuple[str, list]:
    handlers = BinderHandlers(MemoryBus(S), S, SimFleet(), clock=lambda: 0.0)
    refused = []
    for d in deliveries:
        for event in d.events:
            if (why := handlers._fold(event)) is not None:
                refused.append((d.seq, why))
        handlers.applied_seq = d.seq
    return binder_image.digest_of(handlers), refused


def nodewatch_fold(deliveries: list[Delivery]) -> tuple[str, list]:
    watch = NodeWatch(timeout=30.0)
    refused = []
    for d in deliveries:
        for event in d.events:
            if (why := watch.apply(event, d.seq, 0.0)) is not None:
                refused.append((d.seq, why))
        watch.watermark = d.seq
    return watch_image.image_of(watch).digest, refused


def agent_fold(deliveries: list[Delivery], home: Path) -> tuple[str, list]:
    spec = ev.NodeSpec(name=AGENT_NODE, resources=ev.Resources(gpu=NODES[AGENT_NODE]))
    agent = Agent(AgentConfig(node=spec, home=home, pods_dir=home / "pods"), SimpleNamespace(subjects=S))
    refused = [(d.seq, why) for d in deliveries if (why := agent.fold(d)) is not None]
    return agent_image.image_of(agent).digest, refused


def check_fold(fold, slipped) -> None:
    plain, none_refused = fold(plain_log())
    assert none_refused == []
    digest, refused = fold(forged_log(slipped))
    assert digest == plain, "a forged fact changed the fold's state"
    assert fold(forged_log(slipped)) == (digest, refused), "the same log was refused differently"


FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FUZZ
@given(slipped=slips(EVERY_FORGERY))
def test_forged_facts_change_nothing_in_the_allocators_fold(slipped):
    check_fold(allocator_fold, slipped)


@FUZZ
@given(slipped=slips(EVERY_FORGERY))
def test_forged_facts_change_nothing_in_the_binders_fleet(slipped):
    check_fold(binder_fold, slipped)


@FUZZ
@given(slipped=slips(EVERY_FORGERY))
def test_forged_facts_change_nothing_in_the_node_monitor(slipped):
    check_fold(nodewatch_fold, slipped)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(slipped=slips(AGENT_FORGERY))
def test_forged_facts_change_nothing_in_a_machine_agents_log(tmp_path_factory, slipped):
    home = tmp_path_factory.mktemp("agent")
    check_fold(lambda deliveries: agent_fold(deliveries, home), slipped)


def projected_rows(rows: dict, changes: list[tuple]) -> None:
    """Apply a batch's pod changes to ``rows`` as the sink's merge does: to a pod with a row, not finished,
    keeping its node where the change states none (the sequence that wrote it is left out)."""
    for job, pod, status, placed, node, gpus, share, _seq, code, reason in changes:
        row = rows.get((job, pod))
        if row is None or row[0] in FINISHED_POD_STATUSES:
            continue
        where = (node, gpus, share) if placed else row[1]
        rows[(job, pod)] = (status, where, code, reason)


def projector_fold(deliveries: list[Delivery]) -> tuple[tuple, list]:
    """The pods' rows the projection of ``deliveries`` leaves, a batch per message, with the projector's
    placements; and what it refused."""
    facts = ProjectedFacts()
    rows: dict = {}
    refused = []
    for d in deliveries:
        indexes, letters = facts.admit_all([d])
        batch = prepare([d], d.seq - 1, indexes).plan
        for job, pod, *_ in batch.pods:
            rows.setdefault((job, pod), ("pending", (None, [], 0.0), None, None))
        projected_rows(rows, batch.pod_changes)
        refused += [(m.seq, why) for m, why in letters]
    state = (sorted(facts.where.items()), sorted(facts.moving.items()), sorted(facts.gpus.items()))
    return (sorted(rows.items()), state), refused


@FUZZ
@given(slipped=slips(EVERY_FORGERY))
def test_forged_facts_change_nothing_in_the_projection(slipped):
    check_fold(projector_fold, slipped)
