"""The bus in process: an append-only list with the same contract as JetStream.

Messages are kept as bytes, so decoding, admission and dead-lettering
behave exactly as they do over NATS.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from dataclasses import dataclass

from opentelemetry.context import Context

from muster import telemetry
from muster.bus.admission import Refused, admit
from muster.bus.base import Delivery, EnvelopePublisher, Handler, OnDuplicate, check_duplicate
from muster.subjects import Subjects, subject_matches


@dataclass(frozen=True)
class StoredMessage:
    seq: int
    subject: str
    data: bytes
    headers: dict[str, str]


class MemoryBus(EnvelopePublisher):
    def __init__(self, subjects: Subjects | None = None):
        self.subjects = subjects or Subjects()
        self.messages: list[StoredMessage] = []
        self._ids: dict[str, int] = {}
        self._acked: dict[str, int] = {}
        self._changed = asyncio.Condition()

    async def publish_raw(
        self,
        subject: str,
        data: bytes,
        *,
        msg_id: str,
        context: Context | None = None,
        on_duplicate: OnDuplicate = OnDuplicate.DROP,
    ) -> int:
        if msg_id in self._ids:
            seq = self._ids[msg_id]
            stored = self.messages[seq - 1]

            async def same_as_stored() -> bool:
                return (stored.subject, stored.data) == (subject, data)

            # In process every attempt is answered: nothing is ever resent.
            await check_duplicate(
                on_duplicate,
                resent=False,
                same_as_stored=same_as_stored,
                msg_id=msg_id,
                seq=seq,
                subject=subject,
            )
            return seq
        seq = len(self.messages) + 1
        self.messages.append(
            StoredMessage(seq, subject, data, telemetry.inject({"Nats-Msg-Id": msg_id}, context))
        )
        self._ids[msg_id] = seq
        async with self._changed:
            self._changed.notify_all()
        return seq

    async def last_seq(self) -> int:
        return len(self.messages)

    async def consume(
        self,
        name: str,
        subjects: Sequence[str],
        handler: Handler,
        *,
        stop: asyncio.Event,
        batch: int = 256,
        max_attempts: int = 5,
    ) -> None:
        while not stop.is_set():
            start = self._acked.get(name, 0)
            pending = [m for m in self.messages[start : start + batch]]
            if not pending:
                async with self._changed:
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(self._changed.wait(), timeout=0.1)
                continue
            deliveries = []
            for msg in pending:
                if not any(subject_matches(p, msg.subject) for p in subjects):
                    continue
                try:
                    events = admit(self.subjects, msg.subject, msg.data)
                except Refused as exc:
                    await self._dead_letter(name, msg, str(exc))
                    continue
                deliveries.append(
                    Delivery(
                        msg.subject,
                        msg.seq,
                        events,
                        msg.headers,
                        context=telemetry.extract(msg.headers),
                        data=msg.data,
                    )
                )
            await self._handle(name, deliveries, handler, max_attempts)
            self._acked[name] = pending[-1].seq

    async def _handle(
        self, name: str, deliveries: list[Delivery], handler: Handler, max_attempts: int
    ) -> None:
        # As over NATS: the batch first, then one by one so a poison message is isolated.
        if not deliveries:
            return
        try:
            await handler(deliveries)
            return
        except Exception:
            pass
        for delivery in deliveries:
            for attempt in range(1, max_attempts + 1):
                try:
                    await handler([delivery])
                    break
                except Exception as exc:
                    if attempt == max_attempts:
                        msg = self.messages[delivery.seq - 1]
                        await self._dead_letter(name, msg, f"handler failed: {exc!r}")

    async def _dead_letter(self, consumer: str, msg: StoredMessage, error: str) -> None:
        await self.dead_letter(consumer, msg.subject, msg.seq, error, msg.data)
