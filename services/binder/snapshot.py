"""The binder's state as bytes, and back: what its snapshots hold.

The binder's state is a fold of the log: its fleet (``SimFleet``), the
epoch fence, the stale binds it owes a ``BindRejected``, and the sequence
of the last message read. All of it is written canonically (sets and
running pods sorted, a completion heap as its sorted live entries, dicts
in the order the log inserted their keys), so two folds of one log write
the same bytes in any process; its sha256 is the state's digest. The
refusals counted for the warnings ride beside it, undigested: they count
what this process said, not what the log holds.

A live binder changes its fleet when it confirms, before its confirmations
are read back: a snapshot is therefore sealed while no confirmation is
being published (``BinderHandlers.quiet``), so whatever it holds is on the
log already, and reading it back changes nothing.

Every attribute of ``BinderHandlers`` and ``SimFleet`` is imaged here or
named in ``NOT_IMAGED``; a test holds the lists to the classes.
"""

from __future__ import annotations

import heapq

import msgspec
from muster import events as ev
from muster.fencing import EpochFence
from muster.fleet import sim
from muster.snapshotting import Image, ImageError, decoded, encode, pack, unpack

from services.binder.handlers import BinderHandlers

FORMAT = 3

NOT_IMAGED = {
    BinderHandlers: {
        "bus": "wiring",
        "subjects": "wiring",
        "clock": "wiring",
        "metrics": "wiring",
        "_confirming": "a lock",
        "live": "every process starts catching up",
        # Trace contexts are not restored: a job whose group was created before the snapshot is
        # confirmed without its submission's trace, which only costs the trace a link.
        "traces": "trace contexts, not restored",
        # A restarted binder numbers its publications from 0 again, as one that folded from the start.
        "published": "publications of this process, named after applied_seq",
        "refusals": "refusals of the message being folded, lettered before the next one",
        "_refused_elections": "the fence's count, set from it",
        "rejected": "carried undigested",
    },
    sim.SimFleet: {"_readers": "handlers", "_reader_of": "handlers"},
}
"""Attributes not in the digested image, and why."""


class DeviceImage(msgspec.Struct, array_like=True):
    whole: tuple[str, int] | None
    shares: list[tuple[str, int, float]]


class NodeImage(msgspec.Struct, array_like=True):
    spec: ev.NodeSpec
    devices: list[DeviceImage]
    cpu: int
    memory: int
    extended: dict[str, int]
    removed: bool


class JobImage(msgspec.Struct, array_like=True):
    pods: list[tuple[ev.Resources, int]]
    """Runs of equal pod requests: (request, count)."""
    duration: float | None
    workload_uid: str


class RequestImage(msgspec.Struct, array_like=True):
    kind: str
    job: str
    pod: int
    decision: ev.BindRequested | ev.EvictionRequested | None = None
    adoption: sim._Adoption | None = None


class FleetImage(msgspec.Struct, kw_only=True):
    nodes: dict[str, NodeImage]
    jobs: dict[str, JobImage]
    bound: list[sim.BoundPod]
    requests: list[RequestImage]
    adoptions: list[tuple[str, str, list[sim._Adoption]]]
    due: list[tuple[float, tuple[str, int], float]]
    agent_nodes: list[str]
    finished: dict[str, list[int]]
    completing: list[tuple[str, int, str]]


class BinderImage(msgspec.Struct, kw_only=True):
    """What the log alone decides: digested."""

    applied_seq: int
    epochs: dict[str, int]
    refused_elections: int
    last_refused: ev.LeaderElected | None
    to_reject: list[ev.BindRequested]
    fleet: FleetImage


class LocalImage(msgspec.Struct, kw_only=True):
    rejected: list[tuple[str, int, int]]


_binder = msgspec.msgpack.Decoder(BinderImage)
_local = msgspec.msgpack.Decoder(LocalImage)


def _runs(pods: tuple[sim._PodRequest, ...]) -> list[tuple[ev.Resources, int]]:
    out: list[tuple[ev.Resources, int]] = []
    for request, _shared in pods:
        if out and out[-1][0] == request:
            out[-1] = (request, out[-1][1] + 1)
        else:
            out.append((request, 1))
    return out


def fleet_image(fleet: sim.SimFleet) -> FleetImage:
    requests = []
    for (kind, (job, pod)), request in fleet._requests.items():
        if type(request) is sim._Adoption:
            requests.append(RequestImage(kind, job, pod, adoption=request))
        else:
            requests.append(RequestImage(kind, job, pod, decision=request))
    bound = fleet._bound
    # The heap's live entries only: a completion whose pod has gone (or started again) is void anyway,
    # and a fleet that confirmed pops what one that only folded still holds.
    due = sorted({entry for entry in fleet._due if bound.get(entry[1], sim._GONE).started == entry[2]})
    return FleetImage(
        nodes={
            name: NodeImage(
                spec=node.spec,
                devices=[
                    DeviceImage(d.whole, sorted((job, pod, share) for (job, pod), share in d.shares.items()))
                    for d in node.devices
                ],
                cpu=node.cpu,
                memory=node.memory,
                extended=dict(sorted(node.extended.items())),
                removed=node.removed,
            )
            for name, node in fleet._nodes.items()
        },
        jobs={
            name: JobImage(_runs(job.pods), job.duration, job.workload_uid)
            for name, job in fleet._jobs.items()
        },
        bound=[bound[key] for key in sorted(bound)],
        requests=requests,
        adoptions=[
            (job, submission, list(waiting)) for (job, submission), waiting in fleet._adoptions.items()
        ],
        due=due,
        agent_nodes=sorted(fleet._agent_nodes),
        finished={job: sorted(pods) for job, pods in fleet._finished.items()},
        completing=[(job, pod, node) for (job, pod), node in fleet._completing.items()],
    )


def restore_fleet(fleet: sim.SimFleet, i: FleetImage) -> None:
    nodes = {}
    for name, n in i.nodes.items():
        devices = [
            sim._Device(
                whole=tuple(d.whole) if d.whole is not None else None,
                shares={(job, pod): share for job, pod, share in d.shares},
            )
            for d in n.devices
        ]
        nodes[name] = sim._Node(n.spec, devices, n.cpu, n.memory, dict(n.extended), n.removed)
    jobs = {}
    for name, j in i.jobs.items():
        pods: list[sim._PodRequest] = []
        for request, count in j.pods:
            pods += [(request, sim.is_shared(request))] * count
        jobs[name] = sim._Job(pods=tuple(pods), duration=j.duration, workload_uid=j.workload_uid)
    requests: dict = {}
    for r in i.requests:
        requests[(r.kind, (r.job, r.pod))] = r.adoption if r.adoption is not None else r.decision
    fleet._nodes = nodes
    fleet._jobs = jobs
    fleet._bound = {(p.job, p.pod): p for p in i.bound}
    fleet._requests = requests
    fleet._adoptions = {(job, submission): list(waiting) for job, submission, waiting in i.adoptions}
    due = [(at, (key[0], key[1]), started) for at, key, started in i.due]
    heapq.heapify(due)
    fleet._due = due
    fleet._agent_nodes = set(i.agent_nodes)
    fleet._finished = {job: set(pods) for job, pods in i.finished.items()}
    fleet._completing = {(job, pod): node for job, pod, node in i.completing}


def _binder_part(handlers: BinderHandlers) -> bytes:
    fence = handlers.fence
    return encode(
        BinderImage(
            applied_seq=handlers.applied_seq,
            epochs=fence.epochs,
            refused_elections=fence.refused,
            last_refused=fence.last_refused,
            to_reject=list(handlers.to_reject.values()),
            fleet=fleet_image(handlers.fleet),
        )
    )


def image_of(handlers: BinderHandlers) -> Image:
    local = LocalImage(rejected=[(pool, epoch, n) for (pool, epoch), n in handlers.rejected.items()])
    return pack(FORMAT, _binder_part(handlers), local)


def digest_of(handlers: BinderHandlers) -> str:
    return image_of(handlers).digest


def restore_image(handlers: BinderHandlers, data: bytes, digest: str | None = None) -> None:
    """Continue the binder from an image; it is left as it was if the image is refused."""
    part, local_part = unpack(data, format=FORMAT, digest=digest, what="binder")
    image = decoded(_binder, part, "binder")
    local = decoded(_local, local_part, "binder")
    fleet = sim.SimFleet()
    restore_fleet(fleet, image.fleet)
    fence = EpochFence()
    fence.epochs = dict(image.epochs)
    fence.refused = image.refused_elections
    fence.last_refused = image.last_refused
    handlers.fleet = fleet
    handlers.fence = fence
    handlers._refused_elections = fence.refused
    handlers.to_reject = {(b.job, b.pod, b.epoch): b for b in image.to_reject}
    handlers.applied_seq = image.applied_seq
    handlers.rejected = {(pool, epoch): n for pool, epoch, n in local.rejected}


class BinderCodec:
    format = FORMAT

    def image_of(self, fold: BinderHandlers) -> Image:
        return image_of(fold)

    def restore(self, fold: BinderHandlers, data: bytes, digest: str | None = None) -> None:
        restore_image(fold, data, digest)

    def watermark(self, fold: BinderHandlers) -> int:
        return fold.applied_seq

    def summary(self, fold: BinderHandlers) -> str:
        return f"{len(fold.fleet._nodes)} nodes, {len(fold.fleet._bound)} pods running"


__all__ = ["FORMAT", "BinderCodec", "ImageError", "digest_of", "image_of", "restore_image"]
