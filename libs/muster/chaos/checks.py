"""Invariants of a whole run, checked from the event log alone.

Each check folds the log (a list of ``LoggedMessage``, in stream order) and
returns the violations it found, each naming the stream sequence where the
invariant broke. They hold for any run, with or without faults:

- ``double_binds``: a pod is never bound while it is already bound, nor
  after it completed or failed. Bound again after ``PodEvicted`` or
  ``BindFailed`` is legitimate.
- ``over_capacity``: at every point of the log, no device holds more than
  one whole pod or shares summing above 1, no pod holds a device its node
  does not have, and no node's CPU or memory is over-committed.
- ``unsettled_jobs``: at the end, every job is running, completed, failed,
  deleted, or pending with a reason the allocator recorded.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from muster import events as ev
from muster.replay import LoggedMessage
from muster.tolerances import EPS

PodKey = tuple[str, int]


@dataclass(frozen=True)
class Violation:
    check: str
    """double_bind | over_capacity | unsettled_job"""
    seq: int
    """Stream sequence of the message where it happened (0: the end of the log)."""
    message: str

    def __str__(self) -> str:
        where = f"seq {self.seq}" if self.seq else "end of log"
        return f"{self.check} at {where}: {self.message}"


def _events(log: Iterable[LoggedMessage]) -> Iterator[tuple[int, ev.Event]]:
    for message in sorted(log, key=lambda m: m.seq):
        for event in message.events:
            yield message.seq, event


def _pod_requests(group: ev.PodGroupCreated) -> list[ev.Resources]:
    return [spec.resources for spec in group.pods for _ in range(spec.count)]


# -- no pod bound twice -----------------------------------------------------------


def double_binds(log: Iterable[LoggedMessage]) -> list[Violation]:
    """A ``PodBound`` for a pod that is bound, completed or failed."""
    out: list[Violation] = []
    state: dict[PodKey, str] = {}
    for seq, event in _events(log):
        match event:
            case ev.PodBound(job=job, pod=pod, node=node):
                now = state.get((job, pod), "pending")
                if now != "pending":
                    out.append(Violation("double_bind", seq, f"pod {job}[{pod}] bound to {node} while {now}"))
                state[(job, pod)] = f"bound to {node}"
            case ev.PodEvicted(job=job, pod=pod):
                if state.get((job, pod), "").startswith("bound"):
                    state[(job, pod)] = "pending"
            # BindFailed changes nothing: a refused bind of a pending pod leaves it pending, and a
            # refused repeat of a bound pod's bind leaves it bound.
            case ev.PodCompleted(job=job, pod=pod):
                state[(job, pod)] = "completed"
            case ev.PodFailed(job=job, pod=pod):
                state[(job, pod)] = "failed"
            case _:
                pass
    return out


# -- no device over capacity --------------------------------------------------------


@dataclass
class _Node:
    spec: ev.NodeSpec
    whole: dict[int, PodKey] = field(default_factory=dict)
    shares: dict[int, dict[PodKey, float]] = field(default_factory=dict)
    cpu: int = 0
    memory: int = 0


@dataclass(frozen=True)
class _Held:
    node: str
    gpus: tuple[int, ...]
    share: float
    cpu: int
    memory: int


def over_capacity(log: Iterable[LoggedMessage]) -> list[Violation]:
    """Replay binds and releases per node device in log order; report every over-commitment."""
    out: list[Violation] = []
    nodes: dict[str, _Node] = {}
    requests: dict[str, list[ev.Resources]] = {}
    held: dict[PodKey, _Held] = {}

    def release(key: PodKey) -> None:
        pod = held.pop(key, None)
        if pod is None or pod.node not in nodes:
            return
        node = nodes[pod.node]
        for g in pod.gpus:
            if node.whole.get(g) == key:
                del node.whole[g]
            node.shares.get(g, {}).pop(key, None)
        node.cpu -= pod.cpu
        node.memory -= pod.memory

    for seq, event in _events(log):
        match event:
            case ev.NodeRegistered(node=spec) | ev.NodeUpdated(node=spec):
                if spec.name in nodes:
                    nodes[spec.name].spec = spec
                else:
                    nodes[spec.name] = _Node(spec)
            case ev.PodGroupCreated(name=name) if name not in requests:
                requests[name] = _pod_requests(event)
            case ev.PodBound(job=job, pod=pod, node=name, gpus=gpus, gpu_share=share):
                key = (job, pod)
                release(key)  # a double bind is its own check; count the pod once here
                node = nodes.get(name)
                if node is None:
                    out.append(
                        Violation("over_capacity", seq, f"pod {job}[{pod}] bound to unknown node {name}")
                    )
                    continue
                reqs = requests.get(job, [])
                request = reqs[pod] if 0 <= pod < len(reqs) else ev.Resources()
                out.extend(_bind(seq, node, key, tuple(gpus), share, request))
                held[key] = _Held(name, tuple(gpus), share, request.cpu, request.memory)
            case (
                ev.PodEvicted(job=job, pod=pod)
                | ev.PodCompleted(job=job, pod=pod)
                | ev.PodFailed(job=job, pod=pod)
            ):
                release((job, pod))
            case _:
                pass
    return out


def _bind(
    seq: int, node: _Node, key: PodKey, gpus: tuple[int, ...], share: float, request: ev.Resources
) -> list[Violation]:
    out: list[Violation] = []
    name, cap = node.spec.name, node.spec.resources
    who = f"pod {key[0]}[{key[1]}]"
    devices = int(cap.gpu)
    for g in gpus:
        if not 0 <= g < devices:
            out.append(
                Violation("over_capacity", seq, f"{who} holds device {g} of {name}, which has {devices}")
            )
            continue
        if g in node.whole:
            other = node.whole[g]
            out.append(
                Violation(
                    "over_capacity",
                    seq,
                    f"{who} on device {g} of {name}, held whole by {other[0]}[{other[1]}]",
                )
            )
        shares = node.shares.setdefault(g, {})
        if share > 0:
            used = sum(shares.values()) + share
            if used > 1 + EPS:
                out.append(
                    Violation("over_capacity", seq, f"{who}: device {g} of {name} shared to {used:g} > 1")
                )
            shares[key] = share
        else:
            if shares:
                out.append(
                    Violation("over_capacity", seq, f"{who} takes device {g} of {name} whole while shared")
                )
            node.whole[g] = key
    node.cpu += request.cpu
    node.memory += request.memory
    if node.cpu > cap.cpu:
        out.append(Violation("over_capacity", seq, f"{who}: cpu of {name} at {node.cpu}m > {cap.cpu}m"))
    if node.memory > cap.memory:
        out.append(
            Violation("over_capacity", seq, f"{who}: memory of {name} at {node.memory} > {cap.memory}")
        )
    return out


# -- every job settled ----------------------------------------------------------------


def job_outcomes(log: Iterable[LoggedMessage]) -> dict[str, tuple[str, str]]:
    """Each job's status at the end of the log and its last recorded pending reason ('' none)."""
    pods: dict[str, list[str]] = {}
    reasons: dict[str, str] = {}
    deleted: set[str] = set()
    for _, event in _events(log):
        match event:
            case ev.PodGroupCreated(name=name) if name not in pods:
                pods[name] = ["pending"] * len(_pod_requests(event))
            case ev.PodGroupDeleted(name=name):
                deleted.add(name)
            case ev.CycleCompleted(pending=pending) | ev.PendingReasons(reasons=pending):
                reasons.update(pending)
            case (
                ev.PodBound(job=job, pod=pod)
                | ev.PodEvicted(job=job, pod=pod)
                | ev.PodCompleted(job=job, pod=pod)
                | ev.PodFailed(job=job, pod=pod)
            ):
                states = pods.get(job)
                if states is not None and 0 <= pod < len(states):
                    states[pod] = _POD_STATE[type(event)]
            case _:
                pass
    out: dict[str, tuple[str, str]] = {}
    for name in sorted(pods):
        states = pods[name]
        if name in deleted:
            status = "deleted"
        elif states and all(s == "completed" for s in states):
            status = "completed"
        elif "bound" in states:
            status = "running"
        elif "failed" in states and all(s in ("completed", "failed") for s in states):
            # The projection's rule (libs/muster/store/convert.py): a pod of it still to place keeps
            # the job waiting, so it must have a reason like any pending job.
            status = "failed"
        elif "completed" in states:
            status = "completed"  # the gang ran and ended; pods beyond its minimum never had to
        else:
            status = "pending"
        out[name] = (status, reasons.get(name, ""))
    return out


_POD_STATE = {
    ev.PodBound: "bound",
    ev.PodEvicted: "pending",
    ev.PodCompleted: "completed",
    ev.PodFailed: "failed",
}


def unsettled_jobs(log: Iterable[LoggedMessage]) -> list[Violation]:
    """Jobs that end pending without a reason recorded by the allocator."""
    return [
        Violation("unsettled_job", 0, f"job {name} is pending with no reason recorded")
        for name, (status, reason) in job_outcomes(log).items()
        if status == "pending" and not reason
    ]


# -- all together -----------------------------------------------------------------------


@dataclass
class LogReport:
    """What a run did, counted from its log, and every invariant it broke."""

    messages: int = 0
    events: int = 0
    jobs: int = 0
    binds: int = 0
    bind_failures: int = 0
    evictions: int = 0
    completions: int = 0
    dead_letters: int = 0
    outcomes: dict[str, int] = field(default_factory=dict)
    violations: list[Violation] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        base = {
            "messages": self.messages,
            "events": self.events,
            "jobs": self.jobs,
            "binds": self.binds,
            "bind failures": self.bind_failures,
            "evictions": self.evictions,
            "completions": self.completions,
            "dead letters": self.dead_letters,
        }
        base.update({f"jobs {k}": v for k, v in sorted(self.outcomes.items())})
        base["violations"] = len(self.violations)
        return base


def check_log(log: Iterable[LoggedMessage]) -> LogReport:
    """Every check over one log, with the counts a run report prints."""
    log = sorted(log, key=lambda m: m.seq)
    report = LogReport(messages=len(log))
    kinds = {
        ev.PodBound: "binds",
        ev.BindFailed: "bind_failures",
        ev.PodEvicted: "evictions",
        ev.PodCompleted: "completions",
        ev.DeadLettered: "dead_letters",
    }
    for _, event in _events(log):
        report.events += 1
        attr = kinds.get(type(event))
        if attr:
            setattr(report, attr, getattr(report, attr) + 1)
    outcomes = job_outcomes(log)
    report.jobs = len(outcomes)
    for status, _ in outcomes.values():
        report.outcomes[status] = report.outcomes.get(status, 0) + 1
    report.violations = [*double_binds(log), *over_capacity(log), *unsettled_jobs(log)]
    return report
