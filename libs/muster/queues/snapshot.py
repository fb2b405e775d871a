"""The queue-controller's book as bytes, and back: what its snapshots hold.

The book is a fold of the queues subject (the controller's own answers),
read at start; a snapshot holds it and the stream sequence read through,
so a restarted controller reads only what came after.
The book's dict is written in the order the log inserted its queues (the
same in every fold of one log), so its sha256 is the digest.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import msgspec

from muster.events import QueueSpec
from muster.queues.decide import Book
from muster.snapshotting import Image, decoded, encode, pack, unpack

FORMAT = 1


@dataclass
class QueueBook:
    """The controller's fold: its book of queues, as of ``watermark``."""

    book: Book = field(default_factory=dict)
    watermark: int = 0
    """The stream sequence read through (the queues subject up to it is folded)."""


class BookImage(msgspec.Struct, kw_only=True):
    watermark: int
    book: dict[str, QueueSpec]


_book = msgspec.msgpack.Decoder(BookImage)


def image_of(fold: QueueBook) -> Image:
    return pack(FORMAT, encode(BookImage(watermark=fold.watermark, book=fold.book)))


def restore_image(fold: QueueBook, data: bytes, digest: str | None = None) -> None:
    part, _ = unpack(data, format=FORMAT, digest=digest, what="queue-controller")
    image = decoded(_book, part, "queue-controller")
    fold.book = dict(image.book)
    fold.watermark = image.watermark


class QueueBookCodec:
    format = FORMAT

    def image_of(self, fold: QueueBook) -> Image:
        return image_of(fold)

    def restore(self, fold: QueueBook, data: bytes, digest: str | None = None) -> None:
        restore_image(fold, data, digest)

    def watermark(self, fold: QueueBook) -> int:
        return fold.watermark

    def summary(self, fold: QueueBook) -> str:
        return f"{len(fold.book)} queues"
