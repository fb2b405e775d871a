"""The queue-controller's book: restored anywhere in a log, folding on gives what folding from the start gives."""

from __future__ import annotations

import pytest
from muster.events import QueueDeleted, QueueUpserted
from muster.queues import snapshot as codec
from muster.queues.decide import evolve
from muster.replay import LoggedMessage
from muster.snapshotting import ImageError
from muster.subjects import Subjects

from tests.unit.snapshots.logs import digests_under_two_hash_seeds, golden


def queue_messages():
    """The demo's queues, then one deleted and one changed (a change keeps a queue's place)."""
    messages = golden([Subjects("muster").queues])
    queues = [e.queue for m in messages for e in m.events if isinstance(e, QueueUpserted)]
    seq = messages[-1].seq
    return [
        *messages,
        LoggedMessage(seq + 1, "muster.queues.events", [QueueDeleted(name=queues[0].name)]),
        LoggedMessage(seq + 2, "muster.queues.events", [QueueUpserted(queue=queues[1])]),
    ]


def fold(book: codec.QueueBook, messages) -> codec.QueueBook:
    for m in messages:
        for event in m.events:
            book.book = evolve(book.book, event)
        book.watermark = m.seq
    return book


@pytest.mark.parametrize("k", range(5))
def test_a_book_restored_mid_log_ends_with_the_image_of_one_from_the_start(k):
    messages = queue_messages()
    restored = codec.QueueBook()
    image = codec.image_of(fold(codec.QueueBook(), messages[:k]))
    codec.restore_image(restored, image.data, image.digest)
    whole = fold(codec.QueueBook(), messages)
    assert codec.image_of(fold(restored, messages[k:])) == codec.image_of(whole)
    assert list(restored.book.items()) == list(whole.book.items()) and len(whole.book) >= 3


def test_an_image_that_does_not_match_its_digest_is_refused():
    book = fold(codec.QueueBook(), queue_messages())
    with pytest.raises(ImageError, match="digest"):
        codec.restore_image(codec.QueueBook(), codec.image_of(book).data, "0" * 64)


def test_the_digest_does_not_depend_on_the_process_string_hashing():
    script = (
        "from tests.unit.snapshots.test_queue_book_image import fold, queue_messages\n"
        "from muster.queues import snapshot as codec\n"
        "print(codec.image_of(fold(codec.QueueBook(), queue_messages())).digest)\n"
    )
    assert len(digests_under_two_hash_seeds(script)) == 1
