"""A machine agent's fold as bytes, and back: what its snapshots hold.

What an agent folds from the log is its ``NodeLog`` (the placements on its
node and their phases, the jobs they belong to, the fence, which pods
finished, which other nodes still hold pods they were asked to evict),
and, for the gangs it starts, where each job's pod 0 was bound and every
node's address. All of it is decided by the log, and written
canonically (sets sorted, dicts in the order the log inserted their keys):
two agents of one node folding one log write the same bytes, whose sha256
is the digest.

What the agent holds besides is not imaged: its processes are on disk and
taken over at start (``Agent.adopt``), the reports it published are named
by message ids the stream stores once, and the rest is wiring.
"""

from __future__ import annotations

import msgspec

from muster import events as ev
from muster.agent.plan import NodeLog, Phase, Placement
from muster.fencing import EpochFence
from muster.snapshotting import Image, ImageError, decoded, encode, pack, unpack

FORMAT = 2

NOT_IMAGED = {
    "config": "configuration",
    "bus": "wiring",
    "subjects": "wiring",
    "node": "configuration",
    "pool": "configuration",
    "procs": "processes, on disk: adopted at start",
    "local": "processes, on disk: adopted at start",
    "wake": "wiring",
    "published": "reports of this process; their message ids are stored once",
    "tasks": "this process's tasks",
    "draining": "this process's stop",
    "boot": "this process's start",
    "secrets": "a handle on the secret store: values are read at each start, never kept",
}
"""``Agent`` attributes the image leaves out, and why."""


class PlacementImage(msgspec.Struct, array_like=True):
    bind: ev.BindRequested
    seq: int
    phase: Phase
    deleted: bool


class NodeLogImage(msgspec.Struct, kw_only=True):
    node: str
    jobs: dict[str, ev.PodGroupCreated]
    placements: list[PlacementImage]
    lost: int
    epochs: dict[str, int]
    refused_elections: int
    last_refused: ev.LeaderElected | None
    finished: dict[str, list[int]]
    unanswered: list[tuple[ev.EvictionRequested, int]]
    leaving: list[tuple[str, int, str]]


class AgentImage(msgspec.Struct, kw_only=True):
    watermark: int
    log: NodeLogImage
    rank0: dict[str, str]
    addresses: dict[str, str]


_agent = msgspec.msgpack.Decoder(AgentImage)


def node_log_image(log: NodeLog) -> NodeLogImage:
    return NodeLogImage(
        node=log.node,
        jobs=log.jobs,
        # A placement's key is its bind's (job, pod): the list keeps the dict's order.
        placements=[PlacementImage(p.bind, p.seq, p.phase, p.deleted) for p in log.placements.values()],
        lost=log.lost,
        epochs=log.fence.epochs,
        refused_elections=log.fence.refused,
        last_refused=log.fence.last_refused,
        finished={job: sorted(pods) for job, pods in log.finished.items()},
        unanswered=list(log.unanswered.values()),
        leaving=[(job, pod, node) for (job, pod), node in log.leaving.items()],
    )


def node_log_of(image: NodeLogImage) -> NodeLog:
    fence = EpochFence()
    fence.epochs = dict(image.epochs)
    fence.refused = image.refused_elections
    fence.last_refused = image.last_refused
    return NodeLog(
        node=image.node,
        jobs=dict(image.jobs),
        placements={
            (p.bind.job, p.bind.pod): Placement(bind=p.bind, seq=p.seq, phase=p.phase, deleted=p.deleted)
            for p in image.placements
        },
        lost=image.lost,
        fence=fence,
        finished={job: set(pods) for job, pods in image.finished.items()},
        unanswered={(e.job, e.pod): (e, seq) for e, seq in image.unanswered},
        leaving={(job, pod): node for job, pod, node in image.leaving},
    )


def image_of(agent) -> Image:
    """``agent``: anything with ``watermark``, ``log``, ``rank0`` and ``addresses`` (an ``Agent``)."""
    return pack(
        FORMAT,
        encode(
            AgentImage(
                watermark=agent.watermark,
                log=node_log_image(agent.log),
                rank0=agent.rank0,
                addresses=agent.addresses,
            )
        ),
    )


def restore_image(agent, data: bytes, digest: str | None = None) -> None:
    """Continue ``agent``'s fold from an image of its own node's; left as it was if refused."""
    part, _ = unpack(data, format=FORMAT, digest=digest, what="agent")
    image = decoded(_agent, part, "agent")
    if image.log.node != agent.log.node:
        raise ImageError(f"a snapshot of node {image.log.node!r} cannot continue node {agent.log.node!r}")
    agent.log = node_log_of(image.log)
    agent.rank0 = dict(image.rank0)
    agent.addresses = dict(image.addresses)
    agent.watermark = image.watermark


class AgentCodec:
    format = FORMAT

    def image_of(self, fold) -> Image:
        return image_of(fold)

    def restore(self, fold, data: bytes, digest: str | None = None) -> None:
        restore_image(fold, data, digest)

    def watermark(self, fold) -> int:
        return fold.watermark

    def summary(self, fold) -> str:
        live = sum(1 for p in fold.log.placements.values() if p.phase != "gone")
        return f"node {fold.log.node}, {live} placements not gone"
