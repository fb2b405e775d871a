"""What every bus adapter offers, and the types handlers see."""

from __future__ import annotations

import abc
import asyncio
import enum
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from opentelemetry.context import Context

from muster.events import DeadLettered, Event, encode_envelope, encode_event
from muster.subjects import Subjects

# JetStream's default max message size is 1 MiB; stay well below it.
MAX_ENVELOPE_BYTES = 512 * 1024
# A dead letter keeps at most this much of the message, so that the letter itself fits in one message.
MAX_LETTER_DATA = MAX_ENVELOPE_BYTES // 2
MAX_LETTER_ERROR = 4096

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Delivery:
    """One bus message as a consumer receives it: a batch of decoded events."""

    subject: str
    seq: int
    """Stream sequence; with the index in ``events`` it addresses each event."""
    events: list[Event]
    headers: dict[str, str] = field(default_factory=dict)
    attempt: int = 1
    context: Context | None = None
    """Trace context the publisher carried in the headers."""
    data: bytes = b""
    """The message as it travelled (the envelope's bytes), for consumers that keep events verbatim."""


Handler = Callable[[list[Delivery]], Awaitable[None]]
"""Handles a batch of deliveries; returning means every effect is durable.
Raising makes the bus retry them one at a time and dead-letter a poison one."""


class OnDuplicate(enum.Enum):
    """What a publish makes of the stream answering that its message id already names a message.

    JetStream's duplicate window is stream-wide and any login may put any id on
    what it publishes, so "already there" proves only that *some* message holds
    the id: whether it is this publisher's is for the publisher to establish.
    """

    DROP = "drop"
    """The same fact again (a redelivered input, a restarted service): nothing new to store.
    For the system's services, whose ids only they can publish on their subjects' flows."""
    SAME = "same"
    """Accepted only if the stored message is this very one: the same bytes on the same subject
    (a client repeating an idempotent request: registering the same nodes twice is one fact)."""
    NEW = "new"
    """The id must be new to the stream: only an attempt of this same call, resent after its
    acknowledgement was lost, may hold it, and then only with the same bytes on the same subject."""


class DuplicateMessage(RuntimeError):
    """A publish the stream did not store: its message id already names a message not this one."""

    def __init__(self, msg_id: str, seq: int, subject: str):
        super().__init__(
            f"message id {msg_id!r} already names message {seq} of the stream, which this publish to "
            f"{subject} did not send: nothing was stored"
        )
        self.msg_id, self.seq, self.subject = msg_id, seq, subject


async def check_duplicate(
    on_duplicate: OnDuplicate,
    *,
    resent: bool,
    same_as_stored: Callable[[], Awaitable[bool]],
    msg_id: str,
    seq: int,
    subject: str,
) -> None:
    """Raise ``DuplicateMessage`` unless ``on_duplicate`` lets a publish take stored message ``seq`` as its own.

    ``resent``: whether an earlier attempt of this call went unanswered (and so may have been stored).
    """
    if on_duplicate is OnDuplicate.DROP:
        return
    # Under NEW, a first attempt answered "duplicate" met a message stored before this call began:
    # not this call's, whatever its bytes. After an unanswered attempt (NEW), or for a repeatable
    # request (SAME), the stored message may be ours, and its bytes tell: another publisher's message
    # under our id differs from ours, and one with the very same bytes on the very same subject has
    # exactly the effect we sought.
    may_be_ours = on_duplicate is OnDuplicate.SAME or resent
    if may_be_ours and await same_as_stored():
        return
    raise DuplicateMessage(msg_id, seq, subject)


class Bus(Protocol):
    async def publish(
        self,
        subject: str,
        events: Sequence[Event],
        *,
        msg_id: str,
        context: Context | None = None,
        on_duplicate: OnDuplicate = OnDuplicate.DROP,
    ) -> int:
        """Publish one envelope and wait until the stream stored it; returns its sequence.
        Publishing the same ``msg_id`` again stores nothing new: by default that returns the stored
        message's sequence; ``on_duplicate`` may make it ``DuplicateMessage`` instead."""
        ...

    async def publish_raw(
        self,
        subject: str,
        data: bytes,
        *,
        msg_id: str,
        context: Context | None = None,
        on_duplicate: OnDuplicate = OnDuplicate.DROP,
    ) -> int:
        """``publish`` of an envelope already encoded (``envelopes``)."""
        ...

    async def consume(
        self,
        name: str,
        subjects: Sequence[str],
        handler: Handler,
        *,
        stop: asyncio.Event,
        batch: int = 256,
    ) -> None:
        """Deliver every message on ``subjects`` to ``handler``, in stream order, until ``stop``.
        Durable under ``name``: a restarted consumer resumes after its last ack."""
        ...

    async def last_seq(self) -> int:
        """The stream's last sequence number (0 when empty)."""
        ...

    async def dead_letter(self, consumer: str, subject: str, seq: int, error: str, data: bytes) -> None:
        """Keep, under ``consumer``, a message it could not process, with the error (once per message)."""
        ...


def chunk_events(events: Sequence[Event], limit: int = MAX_ENVELOPE_BYTES) -> list[list[Event]]:
    """Split events into envelopes that each stay under ``limit`` bytes, keeping order."""
    chunks: list[list[Event]] = []
    current: list[Event] = []
    size = 0
    for event in events:
        n = len(encode_event(event)) + 1
        if current and size + n > limit:
            chunks.append(current)
            current, size = [], 0
        current.append(event)
        size += n
    if current:
        chunks.append(current)
    return chunks


_ENVELOPE_HEAD, _ENVELOPE_TAIL = b'{"events":[', b"]}"


def envelopes(events: Sequence[Event], limit: int = MAX_ENVELOPE_BYTES) -> list[bytes]:
    """The bytes of the envelopes ``chunk_events`` splits ``events`` into, each event encoded once.

    For a publisher of many events (the podgrouper's groups): measuring each event to split them,
    then encoding every chunk again to send it, would encode everything twice.
    """
    out: list[bytes] = []
    current: list[bytes] = []
    size = 0
    for event in events:
        data = encode_event(event)
        n = len(data) + 1
        if current and size + n > limit:
            out.append(_ENVELOPE_HEAD + b",".join(current) + _ENVELOPE_TAIL)
            current, size = [], 0
        current.append(data)
        size += n
    if current:
        out.append(_ENVELOPE_HEAD + b",".join(current) + _ENVELOPE_TAIL)
    return out


class EnvelopePublisher(abc.ABC):
    """``publish`` and ``dead_letter`` for a bus adapter, from its ``publish_raw``: the events go as one
    envelope."""

    subjects: Subjects

    @abc.abstractmethod
    async def publish_raw(
        self,
        subject: str,
        data: bytes,
        *,
        msg_id: str,
        context: Context | None = None,
        on_duplicate: OnDuplicate = OnDuplicate.DROP,
    ) -> int:
        """Publish the bytes of one message as they are; its stream sequence."""

    async def publish(
        self,
        subject: str,
        events: Sequence[Event],
        *,
        msg_id: str,
        context: Context | None = None,
        on_duplicate: OnDuplicate = OnDuplicate.DROP,
    ) -> int:
        return await self.publish_raw(
            subject, encode_envelope(events), msg_id=msg_id, context=context, on_duplicate=on_duplicate
        )

    async def dead_letter(self, consumer: str, subject: str, seq: int, error: str, data: bytes) -> None:
        """Keep a message nobody could process, with its error; the stream goes on.

        A message too big to travel inside its letter is kept in part, and the error says so.
        """
        log.error("%s: dead-lettering %s seq %d: %s", consumer, subject, seq, error[:MAX_LETTER_ERROR])
        if len(error) > MAX_LETTER_ERROR:
            error = error[:MAX_LETTER_ERROR] + " [...]"
        if len(data) > MAX_LETTER_DATA:
            error += f" (the letter keeps the first {MAX_LETTER_DATA} of its {len(data)} bytes)"
            data = data[:MAX_LETTER_DATA]
        event = DeadLettered(service=consumer, subject=subject, stream_seq=seq, error=error, data=data)
        await self.publish(self.subjects.deadletter, [event], msg_id=f"dead:{consumer}:{seq}")
