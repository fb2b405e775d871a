"""Emit to a running muster system from Python: workloads, queues, nodes, pods already running.

    async with await Client.connect() as client:       # finds the system like the CLI does
        uid = await client.submit(manifests)            # any supported framework manifest(s)

Other languages publish the same JSON (``schemas/WorkloadSubmitted.json``,
wrapped in ``schemas/Envelope.json``) to ``<prefix>.workloads`` with a
``Nats-Msg-Id`` header; see README.

A tenant (``Client.connect(tenant="team-a")``, or ``MUSTER_TENANT``) logs in
with its own login file and submits on ``<prefix>.workloads.<tenant>.<queue>``;
it may cancel only its own jobs. It reads nothing but its own subjects: the
podgrouper's answers to it come on ``<prefix>.answers.<tenant>`` (``answer``).

JetStream drops a message whose ``Nats-Msg-Id`` its stream already holds, from
whoever published it. So every id this client sends is namespaced by its
login and keyed with its login's secret (``message_id``): no other tenant can
compute one in advance. And a request that must be new (a submission, a
cancel, a queue change) is refused with an error, never reported done, when
the stream answers that its id is already taken by a message this call did not
send (``muster.bus.OnDuplicate``).
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import os
import time
from collections.abc import Sequence
from typing import Any

import msgspec

from muster import telemetry
from muster.bus import DuplicateMessage, NatsBus, OnDuplicate, chunk_events
from muster.bus.admission import encode_admitted
from muster.events import (
    AdoptPods,
    CancelRequested,
    DeleteQueue,
    Event,
    NodeRegistered,
    NodeSpec,
    PodGroupCreated,
    PodGroupDeleted,
    QueueRejected,
    QueueSpec,
    QueueUpserted,
    RequestAnswered,
    UpsertQueue,
    WorkloadSubmitted,
)
from muster.runtime.security import NatsCredentials, nats_credentials
from muster.runtime.settings import Endpoints, Settings
from muster.tenants import TenantLogin

# The requests a tenant's answers name (``RequestAnswered.request``), by their types' tags.
SUBMISSION = WorkloadSubmitted.__struct_config__.tag
CANCEL = CancelRequested.__struct_config__.tag

ANSWER_WAIT = 15.0
"""Seconds a tenant's client waits for the podgrouper's answer to a request."""

ADOPTED_PER_EVENT = 1000
"""Pods named in one AdoptPods event: a hundred-odd bytes each, well inside one envelope."""


def workload_uid(manifests: Sequence[dict[str, Any]]) -> str:
    """A stable id for a submission: the same manifests give the same id, so none is stored twice."""
    digest = hashlib.sha256(msgspec.json.encode(list(manifests), order="sorted")).hexdigest()[:16]
    first = manifests[0] if manifests else {}
    meta = first.get("metadata") if isinstance(first, dict) else None
    name = meta.get("name") if isinstance(meta, dict) else None
    kind = first.get("kind") if isinstance(first, dict) else None
    return f"{kind or 'workload'}/{name or 'unnamed'}/{digest}"


ID_TAG_HEX = 32
"""Hex digits of the keyed digest ending a client's message id (128 bits: not to be guessed)."""


def message_id(request: str, key: str | None = None, *, tenant: str | None = None) -> str:
    """The ``Nats-Msg-Id`` of a client's ``request`` (``"submit:<uid>"``): stable for a retry of it.

    A tenant's ids start ``tenant/<name>/`` (a tenant name holds no ``/``; the system's own ids never
    start so), so honest clients never collide across tenants. Ids are no secret, though, and any
    login may publish under any id: with ``key`` (the login's password), the id also ends in a
    digest keyed with it, which no other login can compute before the request is published.
    """
    plain = f"tenant/{tenant}/{request}" if tenant else request
    if not key:
        return plain
    tag = hmac.new(key.encode(), plain.encode(), hashlib.sha256).hexdigest()[:ID_TAG_HEX]
    return f"{plain}/{tag}"


class CancelError(RuntimeError):
    """A cancel that did not happen: refused, or the job is not there; the message says which."""


class SubmitError(RuntimeError):
    """A submission the stream did not store; the message says why."""


class Client:
    def __init__(
        self,
        bus: NatsBus,
        endpoints: Endpoints,
        tenant: TenantLogin | None = None,
        *,
        id_key: str | None = None,
    ):
        self.bus = bus
        self.endpoints = endpoints
        self.subjects = endpoints.subjects
        self.tenant = tenant
        self.id_key = id_key
        """The secret keying this client's message ids (its login's password; None: plain ids)."""

    @classmethod
    async def connect(cls, endpoints: Endpoints | None = None, *, tenant: str | None = None) -> Client:
        """Connect to the system given, or the one the environment / MUSTER_HOME names.

        ``tenant`` (default: ``MUSTER_TENANT``): log in as that tenant, from its login file.
        """
        settings = Settings.from_env()
        endpoints = endpoints or settings.endpoints()
        tenant = tenant or os.environ.get("MUSTER_TENANT") or None
        login = TenantLogin.read(settings.home, tenant) if tenant else None
        credentials = (
            NatsCredentials(login.user, login.password, login.nats_ca)
            if login
            else nats_credentials(endpoints.nats_url, service="muster-client")
        )
        bus = await NatsBus.connect(
            endpoints.nats_url,
            endpoints.subjects,
            service="muster-client",
            credentials=credentials,
            ensure_stream=login is None,  # a tenant may not ask about the stream
        )
        return cls(bus, endpoints, login, id_key=credentials.password if credentials else None)

    def _id(self, request: str) -> str:
        return message_id(request, self.id_key, tenant=self.tenant.tenant if self.tenant else None)

    async def close(self) -> None:
        await self.bus.close()

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(self, *exc) -> None:
        await self.close()

    async def submit(
        self,
        manifests: Sequence[dict[str, Any]],
        *,
        queue: str | None = None,
        submitted_at: float | None = None,
        uid: str | None = None,
        answer_within: float | None = None,
    ) -> str:
        """Publish a workload for the podgrouper; returns its uid.

        As a tenant, it goes to ``queue`` (one of the tenant's; its only one if not given); with
        ``answer_within``, this waits that many seconds for the podgrouper's answer to it and raises
        ``SubmitError`` if it was rejected (``TimeoutError`` if none came: it is stored all the same).
        """
        uid = uid or workload_uid(manifests)
        subject = self.subjects.workloads
        if self.tenant is not None:
            subject = self.subjects.tenant_workloads(self.tenant.tenant, self.tenant.queue_for(queue))
        event = WorkloadSubmitted(
            uid=uid,
            manifests=list(manifests),
            submitted_at=time.time() if submitted_at is None else submitted_at,
            queue=queue,
        )
        with telemetry.tracer().start_as_current_span("submit", attributes={"muster.workload": uid}):
            try:
                sent = await self._publish(
                    subject, [event], msg_id=self._id(f"submit:{uid}"), on_duplicate=OnDuplicate.NEW
                )
            except DuplicateMessage as exc:
                raise SubmitError(
                    f"{uid} was not submitted: {exc} (an earlier submission of this very workload, "
                    "or another login's message under its id)"
                ) from exc
        if self.tenant is not None and answer_within is not None:
            _, answered = await self._answer(SUBMISSION, uid, sent + 1, answer_within, f"submission {uid}")
            if answered.error:
                where = f"{answered.field}: " if answered.field else ""
                raise SubmitError(f"{uid} was rejected: {where}{answered.error}")
        return uid

    async def cancel(self, job: str, *, wait: float = ANSWER_WAIT) -> int:
        """Delete ``job``; returns the sequence of its PodGroupDeleted (as a tenant, of the answer that
        says so). Raises ``CancelError``.

        As a tenant, the podgrouper decides (only the tenant's own jobs), and this waits for its answer.
        """
        if self.tenant is None:
            return await self._cancel_directly(job)
        uid = f"{job}:{time.time_ns()}"
        subject = self.subjects.tenant_workloads(self.tenant.tenant, self.tenant.queues[0])
        request = CancelRequested(uid=uid, job=job)
        try:
            sent = await self._publish(
                subject, [request], msg_id=self._id(f"cancel:{uid}"), on_duplicate=OnDuplicate.NEW
            )
        except DuplicateMessage as exc:
            raise CancelError(f"{job} was not cancelled: {exc}") from exc
        seq, answered = await self._answer(CANCEL, uid, sent + 1, wait, f"cancelling {job}")
        if answered.error:
            raise CancelError(answered.error)
        return seq

    async def answer(self, uid: str, *, wait: float = ANSWER_WAIT) -> RequestAnswered:
        """The podgrouper's answer to this tenant's submission ``uid`` (its first, should the workload
        have been submitted again since): the jobs it made, or why not.

        Read from the tenant's own answers subject; waits up to ``wait`` seconds for it to come.
        """
        return (await self._answer(SUBMISSION, uid, 1, wait, f"submission {uid}"))[1]

    async def _answer(
        self, request: str, uid: str, start: int, wait: float, what: str
    ) -> tuple[int, RequestAnswered]:
        if self.tenant is None:
            raise TypeError("only a tenant's requests are answered on a subject of their own")
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            async for delivery in self.bus.read([self.subjects.answers(self.tenant.tenant)], start_seq=start):
                start = delivery.seq + 1
                for event in delivery.events:
                    if isinstance(event, RequestAnswered) and (event.request, event.uid) == (request, uid):
                        return delivery.seq, event
            await asyncio.sleep(0.05)
        raise TimeoutError(f"no answer from the podgrouper to {what} within {wait:g}s")

    async def own_jobs(self) -> list[str]:
        """A tenant's jobs that its answers say it made and has not cancelled, by name."""
        if self.tenant is None:
            raise TypeError("only a tenant's own jobs are listed from its answers")
        jobs: dict[str, None] = {}
        async for delivery in self.bus.read([self.subjects.answers(self.tenant.tenant)]):
            for event in delivery.events:
                if isinstance(event, RequestAnswered) and not event.error:
                    for name in event.jobs:
                        if event.request == CANCEL:
                            jobs.pop(name, None)
                        else:
                            jobs[name] = None
        return sorted(jobs)

    async def _cancel_directly(self, job: str) -> int:
        # The system's own logins delete on podgroups themselves.
        created = None
        async for delivery in self.bus.read([self.subjects.podgroups]):
            for event in delivery.events:
                if isinstance(event, PodGroupCreated) and event.name == job:
                    created = delivery.seq
                elif isinstance(event, PodGroupDeleted) and event.name == job:
                    created = None
        if created is None:
            raise CancelError(f"no job {job} (it was never created, or is already cancelled)")
        # Cancelling the same job twice is one fact: the id names the job's creation, and a second
        # cancel finds the first one's very message under it.
        try:
            return await self._publish(
                self.subjects.podgroups,
                [PodGroupDeleted(name=job)],
                msg_id=self._id(f"delete:{job}:{created}"),
                on_duplicate=OnDuplicate.SAME,
            )
        except DuplicateMessage as exc:
            raise CancelError(f"{job} was not cancelled: {exc}") from exc

    async def _publish(self, subject: str, events: Sequence[Event], **options: Any) -> int:
        """Publish ``events`` once they pass the check every reader applies (``muster.bus.admission``):
        what readers would dead-letter is refused here, naming the field, instead of being sent and
        then waited for in vain. Raises ``muster.bus.admission.Refused``."""
        data = encode_admitted(self.subjects, subject, events)
        return await self.bus.publish_raw(subject, data, **options)

    async def register_nodes(self, nodes: Sequence[NodeSpec], *, tag: str = "") -> None:
        """Add nodes to the fleet (the sim backend's, or any node source)."""
        by_pool: dict[str, list[Event]] = {}
        for node in nodes:
            by_pool.setdefault(node.pool, []).append(NodeRegistered(node=node))
        for pool, events in sorted(by_pool.items()):
            for i, chunk in enumerate(chunk_events(events)):
                await self._publish(
                    self.subjects.nodes(pool),
                    chunk,
                    msg_id=self._id(f"nodes:{pool}:{tag}:{i}"),
                    on_duplicate=OnDuplicate.SAME,
                )

    async def adopt_pods(self, requests: Sequence[AdoptPods]) -> None:
        """Hand pods already running on the fleet's nodes to it. Publish this before submitting the
        workload they belong to: the fleet reports each (PodBound) once it has read its group, and the
        allocator waits for that before it decides."""
        for request in requests:
            pods = request.pods
            parts = [
                msgspec.structs.replace(request, pods=pods[i : i + ADOPTED_PER_EVENT])
                for i in range(0, len(pods), ADOPTED_PER_EVENT)
            ]
            digest = hashlib.sha256(msgspec.json.encode(request)).hexdigest()[:16]
            for i, chunk in enumerate(chunk_events(parts)):
                await self._publish(
                    self.subjects.nodes(request.pool),
                    chunk,
                    msg_id=self._id(f"adopt:{request.pool}:{digest}:{i}"),
                    on_duplicate=OnDuplicate.SAME,
                )

    async def apply_queues(
        self, queues: Sequence[QueueSpec], *, wait: float = 15.0
    ) -> dict[str, QueueUpserted | QueueRejected]:
        """Ask the queue-controller to create or update queues; wait for its answer to each."""
        requests = [UpsertQueue(queue=q) for q in queues]
        tag = hashlib.sha256(msgspec.json.encode(requests)).hexdigest()[:16]
        start = await self.bus.last_seq() + 1
        await self._publish(
            self.subjects.queue_requests,
            requests,
            msg_id=self._id(f"queues:{tag}:{time.time_ns()}"),
            on_duplicate=OnDuplicate.NEW,
        )
        return await self._answers({q.name for q in queues}, start, wait)

    async def delete_queue(self, name: str, *, wait: float = 15.0) -> Event | None:
        start = await self.bus.last_seq() + 1
        await self._publish(
            self.subjects.queue_requests,
            [DeleteQueue(name=name)],
            msg_id=self._id(f"delete-queue:{name}:{time.time_ns()}"),
            on_duplicate=OnDuplicate.NEW,
        )
        return (await self._answers({name}, start, wait)).get(name)

    async def _answers(self, names: set[str], start: int, wait: float) -> dict[str, Any]:
        answers: dict[str, Any] = {}
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline and len(answers) < len(names):
            async for delivery in self.bus.read([self.subjects.queues], start_seq=start):
                start = delivery.seq + 1
                for event in delivery.events:
                    name = (
                        event.queue.name if isinstance(event, QueueUpserted) else getattr(event, "name", None)
                    )
                    if name in names:
                        answers[name] = event
            if len(answers) < len(names):
                await asyncio.sleep(0.05)
        missing = sorted(names - set(answers))
        if missing:
            raise TimeoutError(
                f"no answer from the queue-controller for {', '.join(missing)} within {wait:g}s"
            )
        return answers
