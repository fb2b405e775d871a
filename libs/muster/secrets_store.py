"""Secret values for pods' environments: kept out of the log and out of Postgres.

A secret is a value under a name in a JetStream key-value bucket of its own,
``<STREAM>_SECRETS``, beside the stream and never in it. A job names a secret
(``PodSpec.secret_env``); the agent that starts the pod reads the value then,
and hands it to the pod's process on a pipe (``muster.agent.procs``). So the
log, the snapshots and the projection hold the name only.

Each owner has a space of its own in the bucket: the system's logins (``cli``)
write ``_system.<name>``, tenant ``t`` writes ``t.<name>``
(``muster.runtime.security.secret_permissions``; ``_`` starts no tenant's
name). A job's references are read in its owner's space (``PodGroupCreated.owner``),
so a tenant's job can name only that tenant's secrets, and no tenant can
write or list another's. Agents read every space (they run every owner's
pods); nobody else reads a value.

Names and spaces: ``muster.secret_names``. The bucket keeps one value per name (history 1): a new value replaces the old, and a
removal leaves none behind.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets as random
from collections.abc import Iterable

from nats.aio.client import Client as NATS
from nats.js import JetStreamContext, api
from nats.js.errors import (
    BadRequestError,
    BucketNotFoundError,
    KeyDeletedError,
    KeyNotFoundError,
    NotFoundError,
)
from nats.js.kv import KV_OP, KeyValue

from muster.events import SecretEnv
from muster.secret_names import MissingSecret, bucket, check_name, check_value, refusal, space, subject_prefix
from muster.stream_replicas import stream_replicas


async def ensure_bucket(js: JetStreamContext, stream: str) -> None:
    """Create the bucket if it does not exist yet (``muster up``, as the CLI user: tenants may not)."""
    name = bucket(stream)
    try:
        await js.key_value(name)
    except BucketNotFoundError:
        config = api.KeyValueConfig(bucket=name, history=1, direct=True, replicas=stream_replicas())
        with contextlib.suppress(BadRequestError):  # made meanwhile by another
            await js.create_key_value(config)


async def read_bucket(js: JetStreamContext, stream: str) -> KeyValue | None:
    """The bucket as an agent reads it, or None if no secret was ever set."""
    try:
        return await js.key_value(bucket(stream))
    except (BucketNotFoundError, NotFoundError):
        return None


class OwnSecrets:
    """One owner's secrets, as that owner sees them: set, remove, list names. Never a value read back."""

    def __init__(self, nc: NATS, stream: str, owner: str, *, timeout: float = 10.0):
        self.nc, self.stream, self.owner, self.timeout = nc, stream, owner, timeout
        js = nc.jetstream(timeout=timeout)
        self.jsm = nc.jsm(timeout=timeout)
        # Opened without asking for the bucket's info, which a tenant may not have: it would name every
        # space's keys.
        self.kv = KeyValue(
            name=bucket(stream), stream=f"KV_{bucket(stream)}", pre=subject_prefix(stream), js=js, direct=True
        )

    def _key(self, name: str) -> str:
        return f"{space(self.owner)}.{check_name(name, 'name')}"

    async def set(self, name: str, value: bytes) -> None:
        await self.kv.put(self._key(name), check_value(value))

    async def remove(self, name: str) -> bool:
        """Remove ``name``'s value; False if the owner has no such secret."""
        key = self._key(name)
        if name not in await self.names():
            return False
        await self.kv.purge(key)
        return True

    async def names(self) -> list[str]:
        """The owner's secrets' names, sorted; their values are not read.

        A consumer filtered to the owner's space, created under that filter's own API subject: the one a
        login's permissions allow (``muster.runtime.security.secret_permissions``).
        """
        prefix = f"{subject_prefix(self.stream)}{space(self.owner)}."
        inbox = self.nc.new_inbox()
        found: dict[str, bool] = {}
        done = asyncio.Event()
        expected = [-1]

        async def on_message(msg) -> None:
            op = (msg.headers or {}).get(KV_OP)
            found[msg.subject.removeprefix(prefix)] = op is None
            if expected[0] >= 0 and len(found) >= expected[0]:
                done.set()

        sub = await self.nc.subscribe(inbox, cb=on_message)
        try:
            config = api.ConsumerConfig(
                name=f"secrets-{random.token_hex(8)}",
                filter_subject=f"{prefix}>",
                deliver_subject=inbox,
                deliver_policy=api.DeliverPolicy.LAST_PER_SUBJECT,
                ack_policy=api.AckPolicy.NONE,
                headers_only=True,
                inactive_threshold=5.0,
                mem_storage=True,
            )
            try:
                info = await self.jsm.add_consumer(f"KV_{bucket(self.stream)}", config=config)
            except NotFoundError:
                return []
            expected[0] = info.num_pending or 0
            if len(found) >= expected[0]:
                done.set()
            await asyncio.wait_for(done.wait(), self.timeout)
        finally:
            with contextlib.suppress(Exception):
                await sub.unsubscribe()
        return sorted(name for name, live in found.items() if live)


async def resolve(kv: KeyValue | None, owner: str, refs: Iterable[SecretEnv]) -> dict[str, str]:
    """Each variable of ``refs`` with its secret's value from ``owner``'s space.

    Raises ``MissingSecret`` for the first reference with no value; an error of the bus propagates
    (the caller tries again rather than start a pod without its variable).
    """
    values: dict[str, str] = {}
    for ref in refs:
        # No bucket yet, or a name no door lets through: either way, no such secret.
        if kv is None or refusal(ref.secret) is not None:
            raise MissingSecret(ref.name, ref.secret, owner)
        try:
            entry = await kv.get(f"{space(owner)}.{ref.secret}")
        except (KeyNotFoundError, KeyDeletedError):
            raise MissingSecret(ref.name, ref.secret, owner) from None
        values[ref.name] = (entry.value or b"").decode()
    return values
