"""``muster cancel JOB``: delete a job; its running pods are stopped (SIGTERM, then SIGKILL)."""

from __future__ import annotations

import argparse

from muster.cli.common import CHECK_FAILED, add_tenant_option, fail, print_json, running_endpoints
from muster.cli.parsing import LIVE_JOBS, completes


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("cancel")
    completes(
        p.add_argument("job", help="job (pod group) name, as `muster run` or `muster status` shows it"),
        LIVE_JOBS,
    )
    add_tenant_option(p, "cancel as this tenant: only its own jobs")
    p.add_argument("--json", action="store_true", help="print one JSON document")
    p.set_defaults(run=_run)


def _run(args: argparse.Namespace) -> int:
    import asyncio

    from muster.cli.live import job_names
    from muster.cli.suggest import did_you_mean
    from muster.sdk import CancelError, Client
    from muster.tenants import TenantError

    endpoints = running_endpoints()

    async def send() -> int:
        async with await Client.connect(endpoints, tenant=args.tenant) as client:
            try:
                return await client.cancel(args.job)
            except CancelError as exc:
                # Only the jobs this login may cancel are offered: a tenant's own, which it knows from
                # its answers (it reads nothing else).
                known = await (
                    job_names(client.bus, live=True) if client.tenant is None else client.own_jobs()
                )
                fail(f"{exc}{did_you_mean(args.job, known)}", CHECK_FAILED)

    try:
        seq = asyncio.run(send())
    except TimeoutError as exc:
        fail(str(exc), CHECK_FAILED)
    except TenantError as exc:
        fail(str(exc))
    if args.json:
        print_json({"job": args.job, "cancelled": True, "seq": seq})
    else:
        print(f"cancelled {args.job}")
    return 0
