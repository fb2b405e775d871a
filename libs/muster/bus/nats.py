"""The bus over NATS JetStream: one stream, durable pull consumers, dead letters."""

from __future__ import annotations

import asyncio
import collections
import contextlib
import copy
import functools
import logging
import secrets
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from urllib.parse import urlsplit, urlunsplit

import nats
from nats.errors import NotJSMessageError
from nats.errors import TimeoutError as NatsTimeoutError
from nats.js import api
from nats.js.errors import BadRequestError, NotFoundError
from opentelemetry.context import Context

from muster import telemetry
from muster.bus.admission import Refused, admit
from muster.bus.base import (
    Delivery,
    EnvelopePublisher,
    Handler,
    OnDuplicate,
    check_duplicate,
)
from muster.events import DeadLettered
from muster.runtime.security import NatsCredentials, nats_connect_options, nats_credentials
from muster.stream_replicas import ENV as REPLICAS_ENV
from muster.stream_replicas import stream_replicas
from muster.subjects import Subjects, subject_matches
from muster.unanswered import UNANSWERED

__all__ = ["NatsBus", "NatsLoginRefused", "subject_matches"]

log = logging.getLogger(__name__)

MSG_ID = "Nats-Msg-Id"
# Within JetStream's 120 s duplicate window, so a resent message is still recognised.
PUBLISH_PATIENCE = 60.0
# The NATS server that multi-subject consumer filters arrived in.
_MULTI_FILTER_VERSION = (2, 10)
# Seconds between an ordered consumer's idle heartbeats; two missed ones (a server restart dropped
# the consumer) make the client re-create it where it was.
ORDERED_HEARTBEAT = 1.0


class NatsLoginRefused(ConnectionError):
    """The server refused our credentials (or their absence): retrying would not help."""


READ_TIMEOUT = 10.0
"""Seconds ``read`` waits for the next message of a stretch the stream holds before giving up."""


def _without_login(url: str) -> str:
    parts = urlsplit(url)
    host = parts.hostname or ""
    return urlunsplit(parts._replace(netloc=f"{host}:{parts.port}" if parts.port else host))


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


def _from_stream(msg) -> bool:
    """Whether ``msg`` came from JetStream (its reply subject carries its stream position).

    Anything else in a consumer's inbox (a plain publish to it) is no part of the log.
    """
    try:
        msg.metadata  # noqa: B018 (parsing it is the test)
    except (NotJSMessageError, ValueError, IndexError):
        log.warning("ignoring a message on %s that did not come from the stream", msg.subject)
        return False
    return True


def _lettered_by(subjects: Subjects, consumer: str, msg) -> list[int]:
    """Stream positions a dead-letter message says ``consumer`` already dead-lettered."""
    try:
        events = admit(subjects, msg.subject, msg.data)
    except Refused:
        return []
    return [e.stream_seq for e in events if isinstance(e, DeadLettered) and e.service == consumer]


class _Letterbox:
    """The dead letters of one reader of the stream from its start, each sent once across its runs.

    A refused message of the history (before ``end``, the stream's end when reading began) waits
    until the history is read: a letter an earlier run sent for it is further on in the stream.
    """

    def __init__(self, bus: NatsBus, name: str, end: int, *, start: int = 1):
        self.bus, self.name, self.end = bus, name, end
        self.live = end < start
        self.lettered: set[int] = set()
        self.waiting: list[tuple[object, str]] = []

    def saw(self, msg) -> None:
        """Note the letters this reader sent in an earlier run (call on every message of the history)."""
        if not self.live and msg.subject == self.bus.subjects.deadletter:
            self.lettered.update(_lettered_by(self.bus.subjects, self.name, msg))

    async def refuse(self, msg, reason: str) -> None:
        if self.live:
            await self.bus.dead_letter(self.name, msg.subject, msg.metadata.sequence.stream, reason, msg.data)
        else:
            self.waiting.append((msg, reason))

    def history_read(self, msg) -> bool:
        """Whether ``msg`` ends the history."""
        return not self.live and (msg.metadata.sequence.stream >= self.end or msg.metadata.num_pending == 0)

    async def catch_up(self) -> None:
        """The history is read: send the letters no earlier run sent; from now on, send them at once."""
        self.live = True
        for msg, reason in self.waiting:
            seq = msg.metadata.sequence.stream
            if seq not in self.lettered:
                await self.bus.dead_letter(self.name, msg.subject, seq, reason, msg.data)
        self.waiting.clear()


class NatsBus(EnvelopePublisher):
    """Publishes envelopes with deterministic message ids and consumes them durably."""

    def __init__(self, nc: nats.NATS, subjects: Subjects, *, service: str = "muster"):
        self.nc = nc
        self.js = nc.jetstream(timeout=10)
        self.subjects = subjects
        self.service = service
        self.publish_patience = PUBLISH_PATIENCE
        """Seconds to keep resending an unacknowledged publish."""
        self.consuming = asyncio.Event()
        """Set once a consumer is bound and reading: what /readyz reports."""
        self.metrics = None

    @classmethod
    async def connect(
        cls,
        url: str,
        subjects: Subjects,
        *,
        service: str = "muster",
        credentials: NatsCredentials | None = None,
        ensure_stream: bool = True,
    ) -> NatsBus:
        """Connect and make sure the stream exists.

        Without ``credentials``, the login comes from the environment or the
        home's client file (``muster.runtime.security.nats_credentials``).
        ``ensure_stream=False``: leave the stream alone, for a login that may
        not even ask about it (a tenant's).
        """
        if credentials is None:
            credentials = nats_credentials(url, service=service)
        refused = asyncio.Event()

        async def on_error(exc: Exception) -> None:
            # Server errors name subjects and users, never passwords.
            if "authorization violation" in str(exc).lower():
                refused.set()
            log.warning("%s: NATS: %s", service, exc)

        # Retrying forever suits a server that is not up yet, not one that refuses our login.
        connecting = asyncio.ensure_future(
            nats.connect(
                # Every server of a cluster, so a client started while one is down reaches another.
                [u.strip() for u in url.split(",") if u.strip()],
                name=service,
                max_reconnect_attempts=-1,
                reconnect_time_wait=0.5,
                connect_timeout=5,
                error_cb=on_error,
                **nats_connect_options(url, credentials),
            )
        )
        refusal = asyncio.ensure_future(refused.wait())
        await asyncio.wait({connecting, refusal}, return_when=asyncio.FIRST_COMPLETED)
        refusal.cancel()
        if not connecting.done():
            connecting.cancel()
            with contextlib.suppress(BaseException):
                await connecting
            who = f"user {credentials.user!r}" if credentials and credentials.user else "an anonymous client"
            raise NatsLoginRefused(f"the NATS server at {_without_login(url)} refused {who}")
        nc = connecting.result()
        bus = cls(nc, subjects, service=service)
        if ensure_stream:
            await bus._patiently(bus.ensure_stream)
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
            num_replicas=stream_replicas(),
        )
        try:
            info = await self.js.stream_info(self.subjects.stream)
        except NotFoundError:
            with contextlib.suppress(BadRequestError):
                await self.js.add_stream(config)
            return
        if (info.config.num_replicas or 1) < config.num_replicas:
            log.warning(
                "%s: stream %s keeps %d replicas, fewer than %s=%d asks for; an operator raises it"
                " (nats stream edit %s --replicas %d)", self.service, config.name, info.config.num_replicas or 1,
                REPLICAS_ENV, config.num_replicas, config.name, config.num_replicas,
            )  # fmt: skip

    def _server_version(self) -> tuple[int, int]:
        version = (self.nc._server_info or {}).get("version", "0.0.0")
        major, minor = (int(part) for part in version.split(".")[:2])
        return major, minor

    async def publish_raw(
        self,
        subject: str,
        data: bytes,
        *,
        msg_id: str,
        context: Context | None = None,
        on_duplicate: OnDuplicate = OnDuplicate.DROP,
    ) -> int:
        """Publish bytes as they are (other producers' messages, and tests of bad input).

        A publish whose acknowledgement does not come (the server restarting, the
        connection re-established) is sent again with the same message id, which
        JetStream stores at most once, for up to ``publish_patience`` seconds.
        An answer that the id is already in the stream is judged by ``on_duplicate``
        (``muster.bus.base.check_duplicate``): this call knows whether it sent before.
        """
        headers = telemetry.inject({MSG_ID: msg_id}, context)
        deadline = time.monotonic() + self.publish_patience
        delay = 0.1
        resent = False
        while True:
            try:
                ack = await self.js.publish(subject, data, headers=headers)
            except UNANSWERED:
                if time.monotonic() + delay > deadline:
                    raise
                log.warning("%s: publish to %s not acknowledged; sending it again", self.service, subject)
                # The unanswered attempt may have been stored: the next may be answered "duplicate".
                resent = True
                await asyncio.sleep(delay)
                delay = min(2.0, delay * 2)
                continue
            if ack.duplicate:
                await check_duplicate(
                    on_duplicate,
                    resent=resent,
                    same_as_stored=functools.partial(self._holds, ack.seq, subject, data),
                    msg_id=msg_id,
                    seq=ack.seq,
                    subject=subject,
                )
            return ack.seq

    async def _holds(self, seq: int, subject: str, data: bytes) -> bool:
        """Whether the stream's message ``seq`` is ``data`` on ``subject`` (False when it cannot tell)."""
        try:
            # Read on ``subject`` only: a login may be allowed to read no more than it publishes to.
            async with contextlib.aclosing(self.read([subject], start_seq=seq, end_seq=seq)) as stored:
                async for delivery in stored:
                    return (delivery.seq, delivery.subject, delivery.data) == (seq, subject, data)
        except UNANSWERED:
            log.warning("%s: could not read message %d to compare it with a publish", self.service, seq)
        return False

    async def first_seq(self) -> int:
        """The oldest sequence the stream still holds (above 1 once older messages were purged)."""
        info = await self.js.stream_info(self.subjects.stream)
        return info.state.first_seq

    async def last_seq(self) -> int:
        info = await self.js.stream_info(self.subjects.stream)
        return info.state.last_seq

    async def _patiently(self, what: Callable[[], Awaitable]):
        """``what()``, asked again while the server does not answer (restarting), for ``publish_patience``."""
        deadline = time.monotonic() + self.publish_patience
        while True:
            try:
                return await what()
            except UNANSWERED:
                if time.monotonic() + 0.5 > deadline:
                    raise
                log.warning("%s: no answer from JetStream; asking again", self.service)
                await asyncio.sleep(0.5)

    async def _bind(
        self, name: str, subjects: Sequence[str], start_seq: int = 0
    ) -> tuple[object, tuple[str, ...]]:
        """Create (or reuse) the durable consumer; returns it and the filter left to the client.

        ``start_seq``: where a consumer created now starts (after one was lost), 0 for the beginning.
        """
        client_filter: tuple[str, ...] = ()
        config = api.ConsumerConfig(
            durable_name=name,
            ack_policy=api.AckPolicy.EXPLICIT,
            deliver_policy=api.DeliverPolicy.BY_START_SEQUENCE if start_seq else api.DeliverPolicy.ALL,
            opt_start_seq=start_seq or None,
            # A killed consumer's unacknowledged messages come back after this long.
            ack_wait=10,
            max_ack_pending=20_000,
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
    ) -> None:
        psub, client_filter = await self._patiently(lambda: self._bind(name, subjects))
        self.consuming.set()
        failures, last_seen = 0, 0
        while not stop.is_set():
            try:
                msgs = await _next_batch(psub, batch)
                failures = 0
            except (TimeoutError, NatsTimeoutError):
                continue
            except Exception:  # connection trouble: the client reconnects; try again shortly
                failures += 1
                log.warning(
                    "%s: fetch failed (%d in a row), retrying", name, failures, exc_info=failures == 1
                )
                await asyncio.sleep(0.5)
                if failures % 6 == 0:
                    psub = await self._rebind_if_lost(psub, name, subjects, last_seen + 1)
                continue
            msgs = [m for m in msgs if _from_stream(m)]
            if msgs:
                last_seen = max(last_seen, msgs[-1].metadata.sequence.stream)
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

    async def _rebind_if_lost(self, psub, name, subjects, start_seq: int):
        """A consumer the server no longer has (lost in a restart, or expired) is made again where we were."""
        try:
            await self.js.consumer_info(self.subjects.stream, name)
            return psub
        except NotFoundError:
            log.warning("%s: consumer lost; recreating it from stream sequence %d", name, start_seq)
            with contextlib.suppress(Exception):
                await psub.unsubscribe()
            rebound, _ = await self._bind(name, subjects, start_seq)
            return rebound
        except Exception:  # JetStream itself is not back yet
            return psub

    def _delivery(self, msg) -> Delivery:
        """A stream message as a delivery of its events; raises ``Refused`` when it is not admitted."""
        headers = dict(msg.headers or {})
        return Delivery(
            subject=msg.subject,
            seq=msg.metadata.sequence.stream,
            events=admit(self.subjects, msg.subject, msg.data),
            headers=headers,
            attempt=msg.metadata.num_delivered,
            context=telemetry.extract(headers),
            data=msg.data,
        )

    async def _decode(self, name: str, msg) -> Delivery | None:
        try:
            return self._delivery(msg)
        except Refused as exc:
            await self.dead_letter(name, msg.subject, msg.metadata.sequence.stream, str(exc), msg.data)
            await msg.ack()
            return None

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

    async def _ordered_batches(
        self, start_seq: int, *, stop: asyncio.Event, batch: int
    ) -> AsyncIterator[list]:
        """Raw messages from ``start_seq`` on, strictly in stream order, in batches of what is ready.

        An ordered consumer: no acks, so nothing is redelivered out of order; a gap in
        its delivery sequence (a message lost in a server restart) makes the client
        re-create it after the last message seen, and a missed heartbeat does the same.
        """
        sub = await self._patiently(
            lambda: self.js.subscribe(
                self.subjects.all,
                ordered_consumer=True,
                idle_heartbeat=ORDERED_HEARTBEAT,
                deliver_policy=api.DeliverPolicy.BY_START_SEQUENCE,
                config=api.ConsumerConfig(opt_start_seq=max(1, start_seq)),
            )
        )
        try:
            while not stop.is_set():
                try:
                    msgs = [await sub.next_msg(timeout=0.5)]
                except (TimeoutError, NatsTimeoutError):
                    continue
                while len(msgs) < batch:
                    try:
                        msgs.append(await sub.next_msg(timeout=0.002))
                    except (TimeoutError, NatsTimeoutError):
                        break
                msgs = [m for m in msgs if _from_stream(m)]
                if not msgs:
                    continue
                if self.metrics is not None:
                    self.metrics.lag.labels(self.service).set(msgs[-1].metadata.num_pending)
                yield msgs
        finally:
            with contextlib.suppress(Exception):
                await sub.unsubscribe()

    async def follow(
        self,
        start_seq: int,
        handler: Handler,
        *,
        stop: asyncio.Event,
        batch: int = 1024,
        name: str = "follower",
    ) -> None:
        """Deliver every message from ``start_seq`` on, strictly in stream order, until ``stop``.

        For a reader that keeps its own position (the projector's checkpoint): an
        ordered consumer, no acks, nothing redelivered out of order. A handler error
        ends the call; the caller resumes from its position. A message that is not
        admitted (``muster.bus.admission``) reaches the handler with no events, so
        the reader's position passes it, and is dead-lettered under ``name`` once:
        those before the stream's end at the call only if no earlier run did.
        """
        letters = _Letterbox(self, name, await self._patiently(self.last_seq), start=start_seq)
        self.consuming.set()
        async with contextlib.aclosing(self._ordered_batches(start_seq, stop=stop, batch=batch)) as batches:
            async for msgs in batches:
                deliveries: list[Delivery] = []
                for msg in msgs:
                    letters.saw(msg)
                    try:
                        deliveries.append(self._delivery(msg))
                    except Refused as exc:
                        await letters.refuse(msg, str(exc))
                        deliveries.append(Delivery(msg.subject, msg.metadata.sequence.stream, []))
                    if letters.history_read(msg):
                        await letters.catch_up()
                await handler(deliveries)

    async def fold(
        self,
        name: str,
        subjects: Sequence[str],
        handler: Callable[[list[Delivery], bool], Awaitable[None]],
        *,
        stop: asyncio.Event,
        batch: int = 512,
        on_caught_up: Callable[[], Awaitable[None]] | None = None,
        start_seq: int = 1,
    ) -> None:
        """For a service whose state is a fold of the log: every message on ``subjects``, once, in order.

        ``handler(deliveries, live)`` sees the stream from its start: the history
        up to the end the stream had when the call began (``live=False``), then
        ``on_caught_up()``, then each new message (``live=True``), until ``stop``.
        Nothing is acknowledged and nothing redelivered, so no message is applied
        twice or out of order (a durable consumer redelivers what a restart or a
        slow handler left unacknowledged, after later messages). A handler error
        ends the call: the state may be half-applied, and a restarted service
        rebuilds it from the log.

        Messages on ``subjects`` that are not admitted (``muster.bus.admission``:
        undecodable, a type their subject does not carry, a value out of bounds)
        never reach the handler; they are dead-lettered under ``name``, once:
        those of the history only if no earlier run already did.

        ``start_seq``: where to start, for a fold restored from a snapshot of the
        messages before it.
        """
        letters = _Letterbox(self, name, await self._patiently(self.last_seq), start=start_seq)

        async def catch_up() -> None:
            await letters.catch_up()
            self.consuming.set()
            if on_caught_up is not None:
                await on_caught_up()

        if letters.live:
            await catch_up()
        async with contextlib.aclosing(self._ordered_batches(start_seq, stop=stop, batch=batch)) as batches:
            async for msgs in batches:
                ready: list[Delivery] = []
                for msg in msgs:
                    letters.saw(msg)
                    if any(subject_matches(p, msg.subject) for p in subjects):
                        try:
                            ready.append(self._delivery(msg))
                        except Refused as exc:
                            await letters.refuse(msg, str(exc))
                    if letters.history_read(msg):
                        if ready:
                            await handler(ready, False)
                            ready = []
                        await catch_up()
                if ready:
                    await handler(ready, letters.live)

    async def read(
        self, subjects: Sequence[str] = (), *, start_seq: int = 1, end_seq: int | None = None
    ) -> AsyncIterator[Delivery]:
        """Every message from ``start_seq`` to ``end_seq`` (default: the stream's end when the read
        began) on ``subjects`` (default: all), in order (for replay, audits, and clients' answers).

        One subject is filtered by the server: the consumer is created with that filter in its API
        subject, the only form a login that may read some subjects only (a tenant's) is allowed.
        """
        start_seq = max(start_seq, 1)
        if end_seq is not None and end_seq < start_seq:
            return
        # Delivered through a callback into a queue: awaiting ``next_msg`` once per message costs a
        # task and a timer each, several times the cost of the message itself.
        arrived: collections.deque = collections.deque()
        wake = asyncio.Event()

        async def arrive(msg) -> None:
            arrived.append(msg)
            wake.set()

        only = subjects[0] if len(subjects) == 1 else None
        config = api.ConsumerConfig(
            # Named, so that the create request carries its filter; a random name no one can guess.
            name=f"read-{secrets.token_hex(8)}",
            filter_subject=only or self.subjects.all,
            deliver_subject=self.nc.new_inbox(),
            deliver_policy=api.DeliverPolicy.BY_START_SEQUENCE,
            opt_start_seq=start_seq,
            ack_policy=api.AckPolicy.NONE,
            max_deliver=1,
            flow_control=True,
            idle_heartbeat=5.0,
            mem_storage=True,
            num_replicas=1,
            inactive_threshold=5.0,
        )
        # What the consumer has to deliver when made: the read ends there (or at ``end_seq``).
        remaining = (await self.js.add_consumer(self.subjects.stream, config)).num_pending
        if not remaining:
            return
        # A gap (a server restart) makes the client create the consumer again from its copy of the
        # config: under a name of its own, as the first one's is still taken.
        again = copy.copy(config)
        again.name = f"read-{secrets.token_hex(8)}"
        sub = await self.js.subscribe_bind(
            self.subjects.stream, again, config.name, cb=arrive, ordered_consumer=True
        )
        try:
            while remaining:
                if not arrived:
                    wake.clear()
                    try:
                        await asyncio.wait_for(wake.wait(), READ_TIMEOUT)
                    except TimeoutError:
                        raise NatsTimeoutError from None
                    continue
                msg = arrived.popleft()
                if not _from_stream(msg):
                    continue
                remaining -= 1
                seq = msg.metadata.sequence.stream
                if end_seq is not None and seq > end_seq:
                    return
                if only or not subjects or any(subject_matches(p, msg.subject) for p in subjects):
                    try:
                        events = admit(self.subjects, msg.subject, msg.data)
                    except Refused:
                        events = []
                    yield Delivery(
                        subject=msg.subject,
                        seq=seq,
                        events=events,
                        headers=dict(msg.headers or {}),
                        data=msg.data,
                    )
                if end_seq is not None and seq >= end_seq:
                    return
        finally:
            await sub.unsubscribe()
