"""``muster submit -f FILE``: a framework manifest into the running system."""

from __future__ import annotations

import argparse

from muster.cli.common import CHECK_FAILED, add_tenant_option, fail, print_json, running_endpoints
from muster.cli.parsing import QUEUES, completes


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "submit",
        description="Checks the manifest the way the podgrouper will, and its queue against the running "
        "system's, then publishes it. Nothing is published when the manifest is bad or its queue unknown.",
    )
    p.add_argument(
        "-f", "--file", required=True, help="manifest file (YAML, several documents separated by ---)"
    )
    completes(p.add_argument("--queue", help="submit to this queue, whatever the manifest says"), QUEUES)
    add_tenant_option(p, "submit as this tenant, to one of its queues (default: its only one)")
    p.add_argument("--json", action="store_true", help="print one JSON document")
    p.set_defaults(run=_run)


async def submit_and_hear(client, docs: list, *, queue: str | None, uid: str) -> str:
    """Submit ``docs``; as a tenant, wait for the podgrouper's answer (``SubmitError`` if rejected).

    No answer in time is said on stderr, not failed: the submission is stored and is answered once
    the podgrouper runs."""
    import sys

    from muster.sdk import ANSWER_WAIT

    wait = ANSWER_WAIT if client.tenant is not None else None
    try:
        return await client.submit(docs, queue=queue, uid=uid, answer_within=wait)
    except TimeoutError as exc:
        print(f"note: {exc}; the submission is stored and will be answered", file=sys.stderr)
        return uid


def _run(args: argparse.Namespace) -> int:
    import asyncio

    from muster.cli.live import live_topologies
    from muster.cli.manifests import read_manifests
    from muster.cli.queue_check import known_queues, note_unchecked, refuse_unknown_queues
    from muster.grouping.errors import ManifestError
    from muster.grouping.group import Grouped, group_and_declare
    from muster.grouping.submission import TENANT_TOPOLOGY
    from muster.queues.default import DEFAULT_QUEUE
    from muster.sdk import Client, SubmitError, workload_uid
    from muster.tenants import TenantError

    docs = read_manifests(args.file)
    try:
        # Checked first without the system (a bad file is refused whether or not one runs), then
        # against the Topologies it holds, which the workloads may name.
        grouped = group_and_declare(docs, held={}, queue_override=args.queue)
    except ManifestError as exc:
        fail(f"{args.file}: {exc}")
    endpoints = running_endpoints()

    async def send() -> tuple[str, Grouped]:
        client = await Client.connect(endpoints, tenant=args.tenant)
        try:
            tenant, queue = client.tenant, args.queue
            checked = grouped
            # A tenant reads only its own subjects, and a purged log may not say: the podgrouper decides.
            held = await live_topologies(client.bus) if tenant is None else None
            if held is not None:
                try:
                    checked = group_and_declare(docs, held=held, queue_override=args.queue)
                except ManifestError as exc:
                    fail(f"{args.file}: {exc}")
            groups = checked.groups
            live = await known_queues(client)
            wanted = [g.queue for g in groups]
            if tenant is not None:
                # To a tenant, the default queue means its own (the podgrouper puts such a job there).
                wanted = [q for q in wanted if q != DEFAULT_QUEUE]
                # A mistyped name gets the name meant before queue_for's own complaint about it.
                refuse_unknown_queues(wanted, live, tenant=tenant)
                if not groups:
                    fail(f"{args.file}: kind: {TENANT_TOPOLOGY}")
                if queue is None and groups[0].queue in tenant.queues:
                    queue = groups[0].queue  # the queue the manifest names picks the tenant's subject
                wanted.append(tenant.queue_for(queue))
            refuse_unknown_queues(wanted, live, tenant=tenant)
            note_unchecked(wanted, live)
            return await submit_and_hear(client, docs, queue=queue, uid=workload_uid(docs)), checked
        finally:
            await client.close()

    try:
        uid, grouped = asyncio.run(send())
    except TenantError as exc:
        fail(str(exc))
    except SubmitError as exc:
        fail(str(exc), CHECK_FAILED)
    groups = grouped.groups
    if args.json:
        print_json(
            {
                "uid": uid,
                "groups": [
                    {"name": g.name, "queue": g.queue, "pods": sum(p.count for p in g.pods)} for g in groups
                ],
                "topologies": [t.name for t in grouped.declared],
            }
        )
    else:
        for t in grouped.declared:
            print(f"declared topology {t.name}: {', '.join(level.label for level in t.levels)}")
        for g in groups:
            print(
                f"submitted {g.name}: {sum(p.count for p in g.pods)} pods to queue {g.queue} (min {g.min_available})"
            )
        print(f"workload {uid}")
    return 0
