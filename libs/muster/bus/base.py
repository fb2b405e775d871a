"""What every bus adapter offers, and the types handlers see."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from opentelemetry.context import Context

from muster.events import Event, encode_event

# JetStream's default max message size is 1 MiB; stay well below it.
MAX_ENVELOPE_BYTES = 512 * 1024


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


class Bus(Protocol):
    async def publish(
        self,
        subject: str,
        events: Sequence[Event],
        *,
        msg_id: str,
        context: Context | None = None,
    ) -> int:
        """Publish one envelope and wait until the stream stored it; returns its sequence.
        Publishing the same ``msg_id`` again stores nothing new."""
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
