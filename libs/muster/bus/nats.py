"""The bus over NATS JetStream: one stream, durable pull consumers, dead letters."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Sequence

import msgspec
import nats
from nats.errors import TimeoutError as NatsTimeoutError
from nats.js import api
from nats.js.errors import BadRequestError, NotFoundError
from opentelemetry.context import Context

from muster import telemetry
from muster.bus.base import Delivery, Handler
from muster.events import DeadLettered, Event, decode_envelope, encode_envelope
from muster.subjects import Subjects

log = logging.getLogger(__name__)

MSG_ID = "Nats-Msg-Id"
# The NATS server that multi-subject consumer filters arrived in.
_MULTI_FILTER_VERSION = (2, 10)


def subject_matches(pattern: str, subject: str) -> bool:
    """NATS subject matching: ``*`` is one token, a trailing ``>`` is one or more."""
    p, s = pattern.split("."), subject.split(".")
    for i, token in enumerate(p):
        if token == ">":
            return len(s) > i
        if i >= len(s) or (token != "*" and token != s[i]):
            return False
    return len(p) == len(s)


async def _next_batch(psub, batch: int) -> list:
    """Wait for one message, then take whatever else is ready, up to ``batch``.

    A plain ``fetch(batch)`` on a quiet stream holds the first message until the
    batch fills or the request expires: latency of its whole timeout per hop.
    """
    first = await psub.fetch(1, timeout=0.5)
    if batch == 1:
        return first
    try:
        return first + await psub.fetch(batch - 1, timeout=0.005)
    except (TimeoutError, NatsTimeoutError):
        return first


class NatsBus:
    """Publishes envelopes with deterministic message ids and consumes them durably."""

    def __init__(self, nc: nats.NATS, subjects: Subjects, *, service: str = "muster"):
        self.nc = nc
        self.js = nc.jetstream(timeout=10)
        self.subjects = subjects
        self.service = service
        self.consuming = asyncio.Event()
        """Set once a consumer is bound and reading: what /readyz reports."""
        self.metrics = None

    @classmethod
    async def connect(cls, url: str, subjects: Subjects, *, service: str = "muster") -> NatsBus:
        nc = await nats.connect(
            url,
            name=service,
            max_reconnect_attempts=-1,
            reconnect_time_wait=0.5,
            connect_timeout=5,
        )
        bus = cls(nc, subjects, service=service)
        await bus.ensure_stream()
        return bus

    async def close(self) -> None:
        # Acks and publishes are flushed; pending pull requests need no draining.
        with contextlib.suppress(Exception):
            await self.nc.flush(timeout=2)
        with contextlib.suppress(Exception):
            await self.nc.close()

    async def ensure_stream(self) -> None:
        """Create the system's stream if it does not exist yet (idempotent)."""
        config = api.StreamConfig(
            name=self.subjects.stream,
            subjects=[self.subjects.all],
            storage=api.StorageType.FILE,
            retention=api.RetentionPolicy.LIMITS,
            duplicate_window=120.0,
        )
        try:
            await self.js.stream_info(self.subjects.stream)
        except NotFoundError:
            with contextlib.suppress(BadRequestError):
                await self.js.add_stream(config)

    def _server_version(self) -> tuple[int, int]:
        version = (self.nc._server_info or {}).get("version", "0.0.0")
        major, minor = (int(part) for part in version.split(".")[:2])
        return major, minor

    async def publish(
        self,
        subject: str,
        events: Sequence[Event],
        *,
        msg_id: str,
        context: Context | None = None,
    ) -> int:
        return await self.publish_raw(subject, encode_envelope(events), msg_id=msg_id, context=context)

    async def publish_raw(
        self, subject: str, data: bytes, *, msg_id: str, context: Context | None = None
    ) -> int:
        """Publish bytes as they are (other producers' messages, and tests of bad input)."""
        headers = telemetry.inject({MSG_ID: msg_id}, context)
        ack = await self.js.publish(subject, data, headers=headers)
        return ack.seq

    async def last_seq(self) -> int:
        info = await self.js.stream_info(self.subjects.stream)
        return info.state.last_seq

    async def _bind(
        self, name: str, subjects: Sequence[str], inactive_threshold: float | None = None
    ) -> tuple[object, tuple[str, ...]]:
        """Create (or reuse) the durable consumer; returns it and the filter left to the client."""
        client_filter: tuple[str, ...] = ()
        config = api.ConsumerConfig(
            durable_name=name,
            ack_policy=api.AckPolicy.EXPLICIT,
            deliver_policy=api.DeliverPolicy.ALL,
            # A killed consumer's unacknowledged messages come back after this long.
            ack_wait=10,
            max_ack_pending=20_000,
            # Per-instance consumers (standby allocators) are removed by the server once unused.
            inactive_threshold=inactive_threshold,
        )
        if len(subjects) == 1:
            config.filter_subject = subjects[0]
        elif self._server_version() >= _MULTI_FILTER_VERSION:
            config.filter_subjects = list(subjects)
        else:
            # Older servers take one filter: read the whole stream in order, skip the rest here.
            config.filter_subject = self.subjects.all
            client_filter = tuple(subjects)
        try:
            await self.js.consumer_info(self.subjects.stream, name)
        except NotFoundError:
            await self.js.add_consumer(self.subjects.stream, config)
        psub = await self.js.pull_subscribe_bind(durable=name, stream=self.subjects.stream)
        return psub, client_filter

    async def consume(
        self,
        name: str,
        subjects: Sequence[str],
        handler: Handler,
        *,
        stop: asyncio.Event,
        batch: int = 256,
        max_attempts: int = 5,
        inactive_threshold: float | None = None,
    ) -> None:
        psub, client_filter = await self._bind(name, subjects, inactive_threshold)
        self.consuming.set()
        while not stop.is_set():
            try:
                msgs = await _next_batch(psub, batch)
            except (TimeoutError, NatsTimeoutError):
                continue
            except Exception:  # connection trouble: the client reconnects; try again shortly
                log.warning("%s: fetch failed, retrying", name, exc_info=True)
                await asyncio.sleep(0.5)
                continue
            if self.metrics is not None and msgs:
                self.metrics.lag.labels(self.service).set(msgs[-1].metadata.num_pending)
            deliveries: list[tuple[Delivery, object]] = []
            for msg in msgs:
                if client_filter and not any(subject_matches(p, msg.subject) for p in client_filter):
                    await msg.ack()
                    continue
                delivery = await self._decode(name, msg)
                if delivery is not None:
                    deliveries.append((delivery, msg))
            if deliveries:
                await self._handle(name, deliveries, handler, max_attempts)

    async def _decode(self, name: str, msg) -> Delivery | None:
        seq = msg.metadata.sequence.stream
        try:
            events = decode_envelope(msg.data)
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            await self.dead_letter(name, msg.subject, seq, str(exc), msg.data)
            await msg.ack()
            return None
        headers = dict(msg.headers or {})
        return Delivery(
            subject=msg.subject,
            seq=seq,
            events=events,
            headers=headers,
            attempt=msg.metadata.num_delivered,
            context=telemetry.extract(headers),
        )

    async def _handle(self, name: str, deliveries, handler: Handler, max_attempts: int) -> None:
        try:
            await handler([d for d, _ in deliveries])
        except Exception:
            log.warning("%s: batch of %d failed; retrying one by one", name, len(deliveries), exc_info=True)
        else:
            for _, msg in deliveries:
                await msg.ack()
            return
        for delivery, msg in deliveries:
            try:
                await handler([delivery])
            except Exception as exc:
                if delivery.attempt >= max_attempts:
                    await self.dead_letter(
                        name, delivery.subject, delivery.seq, f"handler failed: {exc!r}", msg.data
                    )
                    await msg.ack()
                else:
                    await msg.nak(delay=min(0.2 * 2**delivery.attempt, 5.0))
            else:
                await msg.ack()

    async def dead_letter(self, consumer: str, subject: str, seq: int, error: str, data: bytes) -> None:
        """Keep a message nobody could process, with its error; the stream goes on."""
        log.error("%s: dead-lettering %s seq %d: %s", consumer, subject, seq, error)
        event = DeadLettered(service=consumer, subject=subject, stream_seq=seq, error=error, data=data)
        await self.publish(self.subjects.deadletter, [event], msg_id=f"dead:{consumer}:{seq}")

    async def read(self, subjects: Sequence[str] = (), *, start_seq: int = 1) -> AsyncIterator[Delivery]:
        """Every message from ``start_seq`` to the stream's current end, in order (for replay and audits)."""
        end = await self.last_seq()
        if end < start_seq:
            return
        sub = await self.js.subscribe(
            self.subjects.all,
            ordered_consumer=True,
            deliver_policy=api.DeliverPolicy.BY_START_SEQUENCE,
            config=api.ConsumerConfig(opt_start_seq=start_seq),
        )
        try:
            while True:
                msg = await sub.next_msg(timeout=10)
                seq = msg.metadata.sequence.stream
                if not subjects or any(subject_matches(p, msg.subject) for p in subjects):
                    try:
                        events = decode_envelope(msg.data)
                    except (msgspec.DecodeError, msgspec.ValidationError):
                        events = []
                    yield Delivery(
                        subject=msg.subject, seq=seq, events=events, headers=dict(msg.headers or {})
                    )
                if seq >= end:
                    return
        finally:
            await sub.unsubscribe()
