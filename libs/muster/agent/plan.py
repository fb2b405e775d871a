"""What one agent must do on its node, as a pure function of the log and its processes.

``NodeLog`` folds the events that concern one node (its binds, evictions,
confirmations, the pod groups they belong to) into the phase of each pod
placed there. ``decide(log, local)`` compares that with the processes the
agent holds and returns the actions that close the gap: start, stop,
report. The agent performs them and feeds the results back (its own
reports come back through the log), so running ``decide`` twice on the
same inputs asks for nothing new that is not already under way.

Phases of a placement on this node (``Placement.phase``)::

    binding   BindRequested seen; the agent owes a start and PodBound
    bound     PodBound seen (the agent's, possibly from before a restart)
    releasing EvictionRequested seen; the agent owes a stop and PodEvicted
    gone      ended in the log (PodCompleted, PodFailed, PodEvicted, BindFailed,
              job deleted after it was evicted, or bound to another node)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from muster import events as ev
from muster.fencing import EpochFence
from muster.runtimes import AGENT_BACKEND, BACKEND_LABEL, COMMAND
from muster.runtimes import is_agent_node as is_agent_node  # the agent's modules have always found it here

PodKey = tuple[str, int]
Phase = Literal["binding", "bound", "releasing", "gone"]

AGENT_LABEL = BACKEND_LABEL
AGENT_VALUE = AGENT_BACKEND
AGENT_RUNTIMES: tuple[str, ...] = (COMMAND,)
"""What an agent's node declares it runs: processes. The agent starts no containers, so it does not
declare ``image``, and the allocator never sends it a pod that names an image; an agent that gains
a container runtime declares ``image`` here, and only then."""


@dataclass(frozen=True)
class PodRun:
    """What to run for one pod, and where it stands in its gang."""

    job: str
    pod: int
    spec: ev.PodSpec
    world_size: int
    queue: str
    pool: str
    owner: str = ""
    """The tenant whose job it is ('' for the system's own)."""


@dataclass
class Placement:
    """One placement of a pod on this node: the bind that made it and its phase since."""

    bind: ev.BindRequested
    seq: int
    """Stream sequence of the BindRequested: names this placement in message ids."""
    phase: Phase = "binding"
    deleted: bool = False
    """The job was deleted while the pod held the node: stop it, report PodEvicted."""


# What ends the wait for an eviction answer: the answer itself, the pod's end, or a new placement.
_ANSWERS = (ev.PodEvicted, ev.PodCompleted, ev.PodFailed, ev.BindFailed, ev.BindRequested)
# A node's word that it no longer holds a pod.
_ENDS = (ev.PodEvicted, ev.PodCompleted, ev.PodFailed, ev.BindFailed)


@dataclass
class NodeLog:
    """The log as far as one node is concerned."""

    node: str
    jobs: dict[str, ev.PodGroupCreated] = field(default_factory=dict)
    placements: dict[PodKey, Placement] = field(default_factory=dict)
    lost: int = 0
    """How many times the node monitor declared this node lost."""
    fence: EpochFence = field(default_factory=EpochFence)
    """A deposed leader's decisions are never acted on (the binder answers them)."""
    finished: dict[str, set[int]] = field(default_factory=dict)
    """Pods that completed or failed, on any node: never started again (a move's pipelined bind can
    arrive here for a pod that finished on its old node before the eviction did)."""
    unanswered: dict[PodKey, tuple[ev.EvictionRequested, int]] = field(default_factory=dict)
    """Evictions of pods this node does not run (their bind failed; the allocator decided before it
    read that): answered with PodEvicted all the same, so nothing waits on them as releasing."""
    leaving: dict[PodKey, str] = field(default_factory=dict)
    """Pods another node was asked to evict and has not answered for yet, with that node: it holds the
    pod until then, so a move's pipelined bind here waits for it, and only it may say the pod ended."""

    def apply(self, event: ev.Event, seq: int) -> None:
        """Fold one event in; events about other nodes change nothing here, but which pods finished."""
        if not self.fence.admit(event):
            return
        if isinstance(event, ev.PodCompleted | ev.PodFailed):
            self.finished.setdefault(event.job, set()).add(event.pod)
        if self.unanswered and isinstance(event, _ANSWERS):
            self.unanswered.pop((event.job, event.pod), None)
        if self.leaving and isinstance(event, _ENDS):
            self._left(event)
        match event:
            case ev.PodGroupCreated():
                if event.name not in self.jobs:
                    self.finished.pop(event.name, None)
                self.jobs.setdefault(event.name, event)
            case ev.PodGroupDeleted(name=name):
                self.jobs.pop(name, None)
                for key in [key for key in self.leaving if key[0] == name]:
                    del self.leaving[key]
                for key, placement in self.placements.items():
                    if key[0] == name and placement.phase != "gone":
                        placement.deleted = True
            case ev.BindRequested() if event.pod in self.finished.get(event.job, ()):
                pass
            case ev.BindRequested():
                key = (event.job, event.pod)
                if event.node == self.node:
                    current = self.placements.get(key)
                    if current is None or current.phase == "gone":
                        self.placements[key] = Placement(bind=event, seq=seq)
                elif key in self.placements:
                    self.placements[key].phase = "gone"
            case ev.PodBound(node=node) if node == self.node:
                placement = self.placements.get((event.job, event.pod))
                if placement is not None and placement.phase == "binding":
                    placement.phase = "bound"
            case ev.EvictionRequested(node=node) if node == self.node:
                key = (event.job, event.pod)
                placement = self.placements.get(key)
                if placement is not None and placement.phase in ("binding", "bound"):
                    placement.phase = "releasing"
                elif (placement is None or placement.phase == "gone") and event.pod not in self.finished.get(
                    event.job, ()
                ):
                    self.unanswered[key] = (event, seq)
            case ev.EvictionRequested(node=node):
                self.leaving[(event.job, event.pod)] = node
            case (
                ev.PodCompleted(node=node)
                | ev.PodFailed(node=node)
                | ev.PodEvicted(node=node)
                | ev.BindFailed(node=node)
            ) if node == self.node:
                placement = self.placements.get((event.job, event.pod))  # type: ignore[union-attr]
                if placement is not None:
                    placement.phase = "gone"
            case ev.NodeLost(name=name) if name == self.node:
                self.lost += 1
            case _:
                pass

    def _left(self, event: ev.PodEvicted | ev.PodCompleted | ev.PodFailed | ev.BindFailed) -> None:
        key = (event.job, event.pod)
        if self.leaving.get(key) != event.node:
            return
        del self.leaving[key]
        placement = self.placements.get(key)
        if placement is not None and placement.phase == "binding" and not isinstance(event, ev.PodEvicted):
            placement.phase = "gone"  # it ended on the node it was moving from: there is nothing to move

    def held_by(self, key: PodKey) -> str | None:
        """The node that holds pod ``key`` as far as this node's log can tell: this node for a pod bound
        or being bound here (unless the node it moves from still holds it), the node asked to evict it
        until that node answers; None if the log here cannot say."""
        placement = self.placements.get(key)
        if placement is not None and placement.phase in ("binding", "bound"):
            return self.node if placement.phase == "bound" else self.leaving.get(key, self.node)
        return self.leaving.get(key)

    def run_of(self, key: PodKey) -> PodRun | None:
        """The pod's command and gang position, if its job is known."""
        job = self.jobs.get(key[0])
        if job is None:
            return None
        specs = [spec for spec in job.pods for _ in range(spec.count)]
        if not 0 <= key[1] < len(specs):
            return None
        return PodRun(
            job=key[0], pod=key[1], spec=specs[key[1]], world_size=len(specs), queue=job.queue, pool=job.pool,
            owner=job.owner,
        )  # fmt: skip


@dataclass(frozen=True)
class Local:
    """A process the agent holds for a pod (running, stopping, or ended and not yet reported)."""

    key: PodKey
    seq: int
    """The placement it was started for."""
    gpus: tuple[int, ...]
    share: float
    exit_code: int | None = None
    """Set once the process has ended; negative -N: killed by signal N."""
    last_words: str = ""
    """The last line the process wrote to its log, once it has ended: what a failure says of itself."""
    refused: str = ""
    """Why the agent did not start it at all (a secret it names is missing): the failure's reason, with
    no process and no exit status. Set with a non-zero ``exit_code``, so it counts as ended."""
    stopping: bool = False
    requeue: bool = False
    """It ended for a reason not its own (the agent restarted without seeing its end, or
    drained the node): report PodEvicted, so its gang returns to the queue."""

    @property
    def running(self) -> bool:
        return self.exit_code is None and not self.requeue


# -- actions -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Start:
    placement: ev.BindRequested
    seq: int
    run: PodRun


@dataclass(frozen=True)
class Stop:
    """SIGTERM now, SIGKILL after ``grace`` seconds."""

    key: PodKey
    grace: float


@dataclass(frozen=True)
class Report:
    """Publish ``event`` (a message id is derived from ``seq`` and the event's type)."""

    event: ev.Event
    seq: int


@dataclass(frozen=True)
class Forget:
    """The log has caught up with this process's end: drop it from the agent's table."""

    key: PodKey


Action = Start | Stop | Report | Forget


def _occupies(local: Local, bind: ev.BindRequested) -> bool:
    """Whether a process still holding devices is in the way of ``bind``."""
    # Shares of one device were already checked against each other by the allocator.
    both_shared = local.share > 0 and bind.gpu_share > 0
    return bool(set(local.gpus) & set(bind.gpus)) and not both_shared


def decide(log: NodeLog, local: dict[PodKey, Local], *, clock: float, default_grace: float) -> list[Action]:
    """The actions that bring this node's processes in line with the log, in a stable order."""
    out: list[Action] = []
    node = log.node
    releasing = [
        lp for lp in local.values() if lp.running and _placement_phase(log, lp) in ("releasing", "gone")
    ]
    for key in sorted(set(log.placements) | set(local)):
        placement = log.placements.get(key)
        proc = local.get(key)
        ours = proc is not None and placement is not None and proc.seq == placement.seq
        phase = placement.phase if placement is not None else "gone"
        if proc is not None and not ours:
            # A process from an earlier placement of the pod: the log has moved on.
            if proc.running and not proc.stopping:
                out.append(Stop(key, _grace(log, key, default_grace)))
            elif not proc.running:
                out.append(Forget(key))
            continue
        if placement is None:
            continue
        bind = placement.bind
        if proc is None:
            if phase == "binding" and placement.deleted:
                continue  # never started, and nobody waits for it any more
            if phase == "binding" and key in log.leaving:
                continue  # moving here: the node it leaves holds it until it says it let go
            if phase == "binding":
                run = log.run_of(key)
                if run is None:
                    why = f"no pod {key[1]} of job {key[0]}"
                    out.append(Report(_failed(bind, node, None, why, clock), placement.seq))
                elif not run.spec.command:
                    why = f"job {key[0]} gives no command to run (an agent node runs Command jobs)"
                    out.append(Report(_failed(bind, node, None, why, clock), placement.seq))
                elif bind.pipelined and releasing:
                    continue  # placed on what evictions free: wait until they are done
                elif any(_occupies(lp, bind) for lp in releasing):
                    continue
                else:
                    out.append(Start(bind, placement.seq, run))
            elif phase in ("binding", "bound", "releasing"):
                # The log says it runs here, but no process does (the agent restarted without it).
                out.append(Report(_evicted(bind, node), placement.seq))
            continue
        assert proc is not None
        if proc.running:
            if phase in ("releasing", "gone") or placement.deleted:
                if not proc.stopping:
                    out.append(Stop(key, _grace(log, key, default_grace)))
            elif phase == "binding":
                out.append(Report(_bound(bind, node, clock), placement.seq))
            continue
        # The process has ended: say how, unless the log already says it is gone.
        if phase == "gone":
            out.append(Forget(key))
        elif phase == "releasing" or placement.deleted or proc.requeue:
            out.append(Report(_evicted(bind, node), placement.seq))
        elif proc.refused:
            # Never started: failed, never bound, as a pod with nothing to run is.
            out.append(Report(_failed(bind, node, None, proc.refused, clock), placement.seq))
        elif phase == "binding":
            out.append(Report(_bound(bind, node, clock), placement.seq))
        elif proc.exit_code == 0:
            out.append(
                Report(
                    ev.PodCompleted(job=key[0], pod=key[1], node=node, pool=bind.pool, at=clock),
                    placement.seq,
                )
            )
        else:
            reason = _exit_reason(proc.exit_code, proc.last_words)
            out.append(Report(_failed(bind, node, proc.exit_code, reason, clock), placement.seq))
    for key, (eviction, seq) in sorted(log.unanswered.items()):
        out.append(Report(ev.PodEvicted(job=key[0], pod=key[1], node=node, pool=eviction.pool), seq))
    return out


def _placement_phase(log: NodeLog, proc: Local) -> Phase:
    placement = log.placements.get(proc.key)
    if placement is None or placement.seq != proc.seq:
        return "gone"
    if placement.deleted and placement.phase != "gone":
        return "releasing"
    return placement.phase


def _grace(log: NodeLog, key: PodKey, default: float) -> float:
    run = log.run_of(key)
    if run is not None and run.spec.grace_period is not None:
        return max(0.0, run.spec.grace_period)
    return default


def _exit_reason(code: int | None, last_words: str = "") -> str:
    if code is None:
        how = "exit status unknown"
    elif code < 0:
        how = f"killed by signal {-code}"
    else:
        how = f"exited with code {code}"
    return f"{how}: {last_words}" if last_words else how


def _bound(bind: ev.BindRequested, node: str, clock: float) -> ev.PodBound:
    return ev.PodBound(
        job=bind.job,
        pod=bind.pod,
        node=node,
        gpus=list(bind.gpus),
        gpu_share=bind.gpu_share,
        pool=bind.pool,
        at=clock,
    )


def _evicted(bind: ev.BindRequested, node: str) -> ev.PodEvicted:
    return ev.PodEvicted(job=bind.job, pod=bind.pod, node=node, pool=bind.pool)


def _failed(bind: ev.BindRequested, node: str, code: int | None, reason: str, clock: float) -> ev.PodFailed:
    return ev.PodFailed(
        job=bind.job, pod=bind.pod, node=node, pool=bind.pool, exit_code=code, reason=reason, at=clock
    )
