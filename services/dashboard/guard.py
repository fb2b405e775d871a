"""Who the dashboard answers: the hosts it serves, the token beyond loopback, the headers on every answer.

``Guard`` decides (pure: a request's path and headers in, a refusal or
nothing out); ``GuardMiddleware`` applies it in front of the application and
adds ``SECURITY_HEADERS`` to every response, refusals included.

Why each check: a web page elsewhere can make a browser send requests here,
and with DNS rebinding (a name of the attacker's that resolves to this
machine) read the answers as its own. The browser then sends the attacker's
name as ``Host``: answering only the names this dashboard is reached by ends
that. Beyond loopback anyone on the network can connect, so there the data
(the API and ``/healthz``) takes a bearer token; the page and its static
files hold no data and load without it.
"""

from __future__ import annotations

import hmac
import ipaddress
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from dataclasses import dataclass
from typing import Any

import msgspec

SECURITY_HEADERS: tuple[tuple[bytes, bytes], ...] = (
    (b"content-security-policy", b"default-src 'self'; frame-ancestors 'none'"),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
)
WILDCARD_HOSTS = ("", "0.0.0.0", "::")
LOOPBACK_NAMES = ("localhost",)
PUBLIC_PATHS = ("/",)
PUBLIC_PREFIXES = ("/static/",)
"""The page and its files: no data, so no token (the page itself asks for one)."""


def host_name(host: str) -> str:
    """``host`` (a Host header, or a listen address) without its port, brackets or final dot, lowercased."""
    host = host.strip().lower()
    if host.startswith("["):  # [::1]:8765
        return host[1 : host.find("]")] if "]" in host else host[1:]
    if host.count(":") == 1:  # name:8765; more than one colon is a bare IPv6 address
        host = host.split(":", 1)[0]
    return host.rstrip(".")


def _ip(name: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(name)
    except ValueError:
        return None


def is_loopback(host: str) -> bool:
    """Whether a listen address (or a Host) names this machine's loopback only."""
    name = host_name(host)
    ip = _ip(name)
    return name in LOOPBACK_NAMES if ip is None else ip.is_loopback


@dataclass(frozen=True)
class Refusal:
    """A request not served: its status, the header at fault, why (answered as the API's errors are)."""

    status: int
    field: str
    error: str
    headers: tuple[tuple[bytes, bytes], ...] = ()


@dataclass(frozen=True)
class Guard:
    """What a request must show: a Host among ``names`` (or any address, ``any_address``), and ``token``."""

    names: frozenset[str]
    any_address: bool = False
    """Listening on every address: any IP literal is one of ours (no rebinding comes by address)."""
    token: str | None = None
    """The bearer token the data takes; None on loopback, where only this machine can connect."""

    @classmethod
    def for_listen(cls, host: str, extra_names: Iterable[str] = (), token: str | None = None) -> Guard:
        """The guard of a dashboard listening on ``host``: that address, loopback's names, ``extra_names``."""
        listen = host_name(host)
        names = {"localhost", "127.0.0.1", "::1", *(host_name(n) for n in extra_names if n.strip())}
        if listen not in WILDCARD_HOSTS:
            names.add(listen)
        return cls(frozenset(names), any_address=listen in WILDCARD_HOSTS, token=token)

    def answers_for(self, name: str) -> bool:
        """Whether ``name`` (a Host without its port) is one of this dashboard's."""
        ip = _ip(name)
        if ip is None:
            return name in self.names
        return ip.is_loopback or self.any_address or name in self.names

    def refusal(self, path: str, host: str | None, authorization: str | None) -> Refusal | None:
        """Why a request for ``path`` with these headers is refused, or None to serve it."""
        if not host:
            return Refusal(400, "header.host", "a request must say which host it is for (the Host header)")
        name = host_name(host)
        if not self.answers_for(name):
            return Refusal(
                421,
                "header.host",
                f"this dashboard does not answer for host {name!r}: it answers for its listen address, "
                "localhost and the names in MUSTER_DASHBOARD_HOSTS (add this one there if it is yours)",
            )
        if self.token is None or path in PUBLIC_PATHS or path.startswith(PUBLIC_PREFIXES):
            return None
        scheme, _, given = (authorization or "").partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(given.strip().encode(), self.token.encode()):
            return Refusal(
                401,
                "header.authorization",
                "this dashboard listens beyond loopback and wants its access token "
                "(Authorization: Bearer TOKEN): in a browser, open the address `muster up` printed, "
                "which ends in #token=TOKEN; the token is MUSTER_DASHBOARD_TOKEN, or else "
                "MUSTER_HOME/secrets/dashboard-token",
                ((b"www-authenticate", b'Bearer realm="muster"'),),
            )
        return None


Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


class GuardMiddleware:
    """Applies ``guard`` to every HTTP request before ``app`` sees it; adds ``SECURITY_HEADERS`` to all."""

    def __init__(self, app: ASGIApp, guard: Guard):
        self.app, self.guard = app, guard

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or ())
        refused = self.guard.refusal(
            scope["path"], _text(headers.get(b"host")), _text(headers.get(b"authorization"))
        )
        if refused is not None:
            await _answer(send, refused)
            return

        async def send_guarded(message: MutableMapping[str, Any]) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", ()), *SECURITY_HEADERS]
            await send(message)

        await self.app(scope, receive, send_guarded)


def _text(value: bytes | None) -> str | None:
    return value.decode("latin-1") if value is not None else None


async def _answer(send: Send, refused: Refusal) -> None:
    body = msgspec.json.encode({"error": refused.error, "field": refused.field})
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"cache-control", b"no-store"),
        *refused.headers,
        *SECURITY_HEADERS,
    ]
    await send({"type": "http.response.start", "status": refused.status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
