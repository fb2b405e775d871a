"""The queue-controller's decisions: pure functions over the queues it owns.

``evolve`` folds the controller's own facts (QueueUpserted, QueueDeleted)
into its book; ``decide`` answers a request with a fact or a rejection that
names the field.
"""

from __future__ import annotations

import msgspec

from muster.events import (
    DeleteQueue,
    Event,
    QueueDeleted,
    QueueRejected,
    QueueSpec,
    QueueUpserted,
    UpsertQueue,
)
from muster.queues.validate import validate_queues

Book = dict[str, QueueSpec]


def evolve(book: Book, event: Event) -> Book:
    match event:
        case QueueUpserted(queue=q):
            return {**book, q.name: q}
        case QueueDeleted(name=name):
            return {k: v for k, v in book.items() if k != name}
    return book


def decide(book: Book, request: UpsertQueue | DeleteQueue) -> Event:
    match request:
        case UpsertQueue(queue=q):
            return _upsert(book, q)
        case DeleteQueue(name=name):
            return _delete(book, name)
    raise TypeError(f"not a queue request: {request!r}")


def _upsert(book: Book, queue: QueueSpec) -> Event:
    existing = book.get(queue.name)
    # Creation order is the controller's to give: it breaks ties the way KAI's creation time does.
    order = existing.order if existing else max((q.order for q in book.values()), default=-1) + 1
    queue = msgspec.structs.replace(queue, order=order)
    before = set(validate_queues(list(book.values())))
    after = validate_queues([*(q for name, q in book.items() if name != queue.name), queue])
    introduced = [e for e in after if e not in before]
    if introduced:
        first = introduced[0]
        return QueueRejected(
            name=queue.name,
            field=first.field,
            error="; ".join(f"{e.queue}.{e.field}: {e.message}" for e in introduced),
        )
    return QueueUpserted(queue=queue)


def _delete(book: Book, name: str) -> Event:
    if name not in book:
        return QueueRejected(name=name, field="name", error=f"no queue named {name!r}")
    children = sorted(q.name for q in book.values() if q.parent == name)
    if children:
        return QueueRejected(
            name=name, field="name", error=f"queue {name!r} still has children: {', '.join(children)}"
        )
    return QueueDeleted(name=name)
