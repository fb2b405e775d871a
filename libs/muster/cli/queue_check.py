"""Refusing, before anything is published, a job whose queue the running system does not have.

A job sent to a queue that does not exist is accepted by the log and then waits for ever
("queue ... does not exist"); a typo is better caught at the door, with the name meant.
"""

from __future__ import annotations

import sys
from collections.abc import Collection, Iterable

from muster.cli.common import fail
from muster.cli.live import live_queues
from muster.cli.suggest import suggestion
from muster.queues.default import DEFAULT_QUEUE
from muster.sdk import Client
from muster.tenants import TenantLogin


def queue_refusal(
    queue: str, live: Collection[str] | None, *, tenant: TenantLogin | None = None
) -> str | None:
    """Why a job may not go to ``queue``, or None when it may.

    ``live``: the queues the system has. When that is not known (None), or the system has no queue
    at all (its queue-controller has not run yet: it makes ``default-queue`` when it starts), only a
    tenant's own list is checked.
    """
    if tenant is not None and queue not in tenant.queues:
        return f'queue "{queue}" is not one of tenant {tenant.tenant}\'s queues' + suggestion(
            queue, tenant.queues, "its queues are"
        )
    if not live or queue in live:
        return None
    why = " (where a job that names no queue goes)" if queue == DEFAULT_QUEUE else ""
    candidates = live if tenant is None else [q for q in live if q in tenant.queues]
    return f'queue "{queue}" does not exist{why}' + suggestion(queue, candidates, "the queues there are")


def refuse_unknown_queues(
    queues: Iterable[str], live: Collection[str] | None, *, tenant: TenantLogin | None = None
) -> None:
    """Exit 2 naming every queue of ``queues`` a job may not go to (see ``queue_refusal``)."""
    refusals = [queue_refusal(q, live, tenant=tenant) for q in dict.fromkeys(queues)]
    if any(refusals):
        fail("\n".join(r for r in refusals if r is not None))


def note_unchecked(queues: Iterable[str], live: Collection[str] | None) -> None:
    """Say on stderr which queues were let through unchecked because the system has none yet."""
    unchecked = [q for q in dict.fromkeys(queues) if q != DEFAULT_QUEUE]
    if live is None or live or not unchecked:
        return
    names = ", ".join(f'"{q}"' for q in unchecked)
    which = f"queue {names} was" if len(unchecked) == 1 else f"queues {names} were"
    print(
        f"note: the system has no queues yet (its queue-controller makes {DEFAULT_QUEUE} when it "
        f"starts), so {which} not checked; a job waits until its queue exists",
        file=sys.stderr,
    )


async def known_queues(client: Client) -> frozenset[str] | None:
    """The queues the system at ``client`` has; None when they cannot be known (see ``live_queues``),
    or the client may not know them: a tenant reads only its own subjects, and knows its own queues."""
    if client.tenant is not None:
        return None
    return await live_queues(client.bus)


async def check_queues(client: Client, queues: Iterable[str]) -> None:
    """Exit 2 unless every one of ``queues`` is a queue the system at ``client`` has, and, as a
    tenant, one of its own."""
    queues = list(queues)
    live = await known_queues(client)
    refuse_unknown_queues(queues, live, tenant=client.tenant)
    note_unchecked(queues, live)
