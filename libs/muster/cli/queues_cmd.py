"""``muster queues apply -f FILE``: create or update queues (ours, or KAI's Queue manifests)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from muster.cli.common import CHECK_FAILED, fail, print_json, running_endpoints

if TYPE_CHECKING:
    from muster.events import QueueSpec


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("queues")
    verbs = p.add_subparsers(dest="verb", metavar="VERB")
    apply = verbs.add_parser(
        "apply",
        help="create or update the queues in a file",
        description="FILE holds queues in the scenario format (a list, or {queues: [...]}) "
        "or KAI Scheduler's own scheduling.run.ai/v2 Queue manifests (CPU in millicores, memory in MB).",
    )
    apply.add_argument("-f", "--file", required=True)
    apply.add_argument("--json", action="store_true", help="print one JSON document")
    apply.set_defaults(run=_apply)
    p.set_defaults(run=lambda args: p.print_help() or 2)


def read_queue_file(path: str) -> list[QueueSpec]:
    """Queues from either format; exits 2 naming the file and field on bad input."""
    from muster.cli.manifests import read_documents
    from muster.queues.kai_queue import QueueManifestError, is_kai_queue, parse_kai_queues
    from muster.scenario import ScenarioError, parse_queues

    docs = read_documents(path)
    if all(is_kai_queue(d) for d in docs):
        try:
            return parse_kai_queues(docs)
        except QueueManifestError as exc:
            fail(f"{path}: {exc}")
    if len(docs) != 1:
        fail(f"{path}: expected one list of queues, or KAI Queue manifests separated by ---")
    try:
        return parse_queues(docs[0])
    except ScenarioError as exc:
        fail(str(exc.in_file(path)))


def topological(queues: list[QueueSpec]) -> list[QueueSpec]:
    """File order, except that a parent in the file always comes before its children."""
    names = {q.name for q in queues}
    done: set[str] = set()
    out: list[QueueSpec] = []
    pending = list(queues)
    while pending:
        rest = []
        for q in pending:
            if q.parent is None or q.parent not in names or q.parent in done:
                out.append(q)
                done.add(q.name)
            else:
                rest.append(q)
        if len(rest) == len(pending):  # a cycle: let the queue-controller name it
            out.extend(rest)
            break
        pending = rest
    return out


async def apply_queues(queues: list[QueueSpec]) -> dict:
    from muster.sdk import Client

    client = await Client.connect(running_endpoints())
    try:
        return await client.apply_queues(topological(queues))
    finally:
        await client.close()


def _apply(args: argparse.Namespace) -> int:
    import asyncio

    from muster.events import QueueRejected

    queues = read_queue_file(args.file)
    try:
        answers = asyncio.run(apply_queues(queues))
    except TimeoutError as exc:
        fail(str(exc), CHECK_FAILED)
    rejected = {n: a for n, a in answers.items() if isinstance(a, QueueRejected)}
    if args.json:
        print_json(
            {
                "applied": sorted(n for n in answers if n not in rejected),
                "rejected": {n: {"field": a.field, "error": a.error} for n, a in sorted(rejected.items())},
            }
        )
    else:
        for q in queues:
            answer = answers[q.name]
            if isinstance(answer, QueueRejected):
                print(f"queue {q.name}: rejected: {answer.field}: {answer.error}")
            else:
                print(f"queue {q.name}: applied")
    return CHECK_FAILED if rejected else 0
