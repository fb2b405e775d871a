"""Give a running embedded NATS the users of the tenants and agent logins declared now, without
restarting it.

``muster up`` notes how it rendered the server's config (``nats-server.json``)
and the server writes its pid; re-rendering from the home's secrets, tenants
and agent logins, then SIGHUP, makes nats-server reload its users in place: a
new tenant or node can log in at once, a removed one is disconnected.
"""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

from muster import agent_logins, tenants
from muster.runtime.embedded import NATS_PID_FILE, NATS_STATE_FILE, EmbeddedNats
from muster.runtime.security import CLIENT_FILE, SECRETS_DIR, NatsAuth, SystemSecrets, make_tls


def _server_pid(home: Path) -> int | None:
    """The pid of the nats-server running from this home's config, if one runs."""
    try:
        pid = int((home / NATS_PID_FILE).read_text().strip())
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except (FileNotFoundError, ValueError, ProcessLookupError):
        return None
    # A stale pid file may name another process by now: SIGHUP would end it.
    if str(home / "nats.conf").encode() not in cmdline:
        return None
    return pid


def reload_users(home: Path) -> bool:
    """Re-render the running embedded server's users and make it reload them; False if none runs
    or it runs without users (then there are no logins to add)."""
    try:
        state = json.loads((home / NATS_STATE_FILE).read_text())
    except FileNotFoundError:
        return False
    pid = _server_pid(home)
    if pid is None or not state["users"]:
        return False
    auth = NatsAuth(
        state["prefix"],
        SystemSecrets.load_or_create(home).nats,
        tls=make_tls(home / "tls") if state["tls"] else None,
        tenants=tenants.load(home),
        agents=agent_logins.load(home),
    )
    EmbeddedNats(home, host=state["host"], port=state["port"], auth=auth).write_config()
    os.kill(pid, signal.SIGHUP)
    return True


def running_login(home: Path) -> tuple[str, str | None]:
    """The NATS address and CA a running `muster up` wrote for its clients, if one runs."""
    try:
        data = json.loads((home / SECRETS_DIR / CLIENT_FILE).read_text())
    except (FileNotFoundError, ValueError):
        return "", None
    return data.get("nats_url", ""), data.get("nats_ca")


def reloaded(home: Path, permissions: str) -> str:
    """Reload the running server's users and say so, or say when a new login takes effect: at the next
    `muster up`, or, on servers of one's own, once their config has the user ``permissions`` describes."""
    if reload_users(home):
        return "the running NATS has reloaded its users"
    return (
        "takes effect at the next `muster up` "
        f"(servers of your own: add the user from muster.runtime.security.{permissions})"
    )
