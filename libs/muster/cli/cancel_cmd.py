"""``muster cancel JOB``: delete a job; its running pods are stopped (SIGTERM, then SIGKILL)."""

from __future__ import annotations

import argparse
import asyncio

from muster.bus import NatsBus
from muster.cli.common import CHECK_FAILED, fail, print_json, running_endpoints
from muster.events import PodGroupCreated, PodGroupDeleted


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("cancel", help="delete a job: its pods stop and its resources return to the queue")
    p.add_argument("job", help="job (pod group) name, as `muster run` or `muster status` shows it")
    p.add_argument("--json", action="store_true", help="print one JSON document")
    p.set_defaults(run=_run)


def _run(args: argparse.Namespace) -> int:
    endpoints = running_endpoints()

    async def send() -> int:
        bus = await NatsBus.connect(endpoints.nats_url, endpoints.subjects, service="muster-cancel")
        try:
            created = None
            async for delivery in bus.read([endpoints.subjects.podgroups]):
                for event in delivery.events:
                    if isinstance(event, PodGroupCreated) and event.name == args.job:
                        created = delivery.seq
                    elif isinstance(event, PodGroupDeleted) and event.name == args.job:
                        created = None
            if created is None:
                fail(f"no job {args.job} (it was never created, or is already cancelled)", CHECK_FAILED)
            # Cancelling the same job twice is one fact: the id names the job's creation.
            return await bus.publish(
                endpoints.subjects.podgroups,
                [PodGroupDeleted(name=args.job)],
                msg_id=f"cancel:{args.job}:{created}",
            )
        finally:
            await bus.close()

    seq = asyncio.run(send())
    if args.json:
        print_json({"job": args.job, "cancelled": True, "seq": seq})
    else:
        print(f"cancelled {args.job}")
    return 0
