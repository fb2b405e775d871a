"""``muster cancel JOB``: delete a job; its running pods are stopped (SIGTERM, then SIGKILL)."""

from __future__ import annotations

import argparse
import asyncio

from muster.cli.common import CHECK_FAILED, add_tenant_option, fail, print_json, running_endpoints
from muster.sdk import CancelError, Client
from muster.tenants import TenantError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("cancel", help="delete a job: its pods stop and its resources return to the queue")
    p.add_argument("job", help="job (pod group) name, as `muster run` or `muster status` shows it")
    add_tenant_option(p, "cancel as this tenant: only its own jobs")
    p.add_argument("--json", action="store_true", help="print one JSON document")
    p.set_defaults(run=_run)


def _run(args: argparse.Namespace) -> int:
    endpoints = running_endpoints()

    async def send() -> int:
        async with await Client.connect(endpoints, tenant=args.tenant) as client:
            return await client.cancel(args.job)

    try:
        seq = asyncio.run(send())
    except (CancelError, TimeoutError) as exc:
        fail(str(exc), CHECK_FAILED)
    except TenantError as exc:
        fail(str(exc))
    if args.json:
        print_json({"job": args.job, "cancelled": True, "seq": seq})
    else:
        print(f"cancelled {args.job}")
    return 0
