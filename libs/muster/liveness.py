"""Whether a lease holder's process is still there, so a crash is seen at once, not when its lease lapses.

Each allocator instance answers on a core NATS subject of its own
(``Subjects.alive``). When its process dies, the operating system closes its
connection, the server drops its subscriptions, and a request to that
subject fails at once with "no responders". A standby that gets that answer
about the lease's holder takes the lease without waiting out the ttl.

Only that answer counts as gone. A holder that is alive but slow to answer
(a long cycle on its event loop) still has its subscription: the request
times out, which reads as alive, and the lease's expiry still covers a hung
holder, or a host that vanished without closing its connections. Taking
the lease of a holder that was alive after all (it lost its connection for
a moment) is safe: its next renewal fails, and the binder refuses its
decisions by epoch (``muster.fencing``).
"""

from __future__ import annotations

from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription
from nats.errors import NoRespondersError

from muster.unanswered import UNANSWERED


async def answer_probes(nc: Client, subject: str) -> Subscription:
    """Answer every probe on ``subject`` for as long as this connection lives."""

    async def answer(msg: Msg) -> None:
        if msg.reply:
            await msg.respond(b"")

    return await nc.subscribe(subject, cb=answer)


async def gone(nc: Client, subject: str, timeout: float) -> bool:
    """Whether nobody answers on ``subject`` any more: the server knows no subscriber there."""
    try:
        await nc.request(subject, b"", timeout=timeout)
    except NoRespondersError:
        return True
    except UNANSWERED:
        return False  # slow, or the server did not answer: not proof of anything
    return False
