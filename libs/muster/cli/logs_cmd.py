"""``muster logs JOB [--pod K] [--follow]``: a pod's output, from the agent that runs it."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from muster.cli.common import CHECK_FAILED, fail, running_endpoints
from muster.cli.parsing import JOBS, completes

if TYPE_CHECKING:
    from muster.bus import NatsBus
    from muster.subjects import Subjects


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("logs")
    completes(p.add_argument("job", help="job name"), JOBS)
    p.add_argument("--pod", type=int, default=0, help="pod index, 0 to count-1 (default 0)")
    p.add_argument("-f", "--follow", action="store_true", help="keep printing until the pod ends")
    p.set_defaults(run=_run)


async def where(bus: NatsBus, subjects: Subjects, job: str, pod: int) -> tuple[str | None, str | None]:
    """Whose the job is ('' for the system's own; None: there is no such job), and the node the pod
    was last bound to. A name used again after its job was deleted is the newest job's."""
    from muster.events import PodBound, PodGroupCreated, PodGroupDeleted

    owner, node, deleted = None, None, False
    async for delivery in bus.read([subjects.podgroups, *subjects.pod_subjects()]):
        for event in delivery.events:
            if isinstance(event, PodGroupCreated) and event.name == job:
                if owner is None or deleted:
                    owner, node, deleted = event.owner, None, False
            elif isinstance(event, PodGroupDeleted) and event.name == job:
                deleted = True
            elif isinstance(event, PodBound) and event.job == job and event.pod == pod:
                node = event.node
    return owner, node


async def stream_log(
    bus: NatsBus, subjects: Subjects, node: str, job: str, pod: int, follow: bool, out, owner: str = ""
) -> None:
    import asyncio

    from nats.errors import NoRespondersError
    from nats.errors import TimeoutError as NatsTimeoutError

    from muster.agent import logs

    offset = 0
    while True:
        request = logs.LogRequest(job=job, pod=pod, owner=owner, offset=offset)
        try:
            reply = await bus.nc.request(subjects.agent_logs(node), logs.encode(request), timeout=5)
        except (NoRespondersError, NatsTimeoutError, TimeoutError):
            fail(
                f"the agent of node {node} does not answer (is `muster agent --node {node}` running?)",
                CHECK_FAILED,
            )
        chunk = logs.decode_chunk(reply.data)
        if not chunk.found:
            fail(f"node {node} has no log of {job} pod {pod}", CHECK_FAILED)
        out.write(chunk.data)
        out.flush()
        offset = chunk.next
        if chunk.data and chunk.next < chunk.size:
            continue
        if not follow or not chunk.running:
            return
        await asyncio.sleep(0.5)


def _run(args: argparse.Namespace) -> int:
    import asyncio

    from muster.bus import NatsBus
    from muster.cli.live import job_names
    from muster.cli.suggest import did_you_mean

    endpoints = running_endpoints()
    subjects = endpoints.subjects

    async def main() -> None:
        bus = await NatsBus.connect(endpoints.nats_url, subjects, service="muster-logs")
        try:
            while True:
                owner, node = await where(bus, subjects, args.job, args.pod)
                if owner is None:
                    hint = did_you_mean(args.job, await job_names(bus))
                    fail(f"no job {args.job}{hint}", CHECK_FAILED)
                if node is not None:
                    break
                if not args.follow:
                    fail(f"pod {args.pod} of {args.job} has not started yet", CHECK_FAILED)
                await asyncio.sleep(1.0)
            await stream_log(bus, subjects, node, args.job, args.pod, args.follow, sys.stdout.buffer, owner)
        finally:
            await bus.close()

    asyncio.run(main())
    return 0
