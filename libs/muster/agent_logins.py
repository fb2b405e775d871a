"""Machine agents' own NATS logins: one per node, speaking for that node only.

``muster node add NODE`` gives the agent of ``NODE`` the NATS user
``agent-<node token>`` (``muster.runtime.security.agent_user``), allowed to publish facts only on its
node's subjects (``<prefix>.pods.*.<node>``, ``<prefix>.nodes.*.<node>``:
``muster.runtime.security.agent_permissions``); bus admission refuses any
event there naming another node. Its login (password included) is kept in
``MUSTER_HOME/secrets/agents/NODE.json``, readable by its owner only: the
file ``muster agent --node NODE`` reads, and the embedded NATS's list of
agent users. Without one, an agent logs in as the shared ``agent`` user,
which may speak for every node.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from muster.names import NODE
from muster.runtime.security import (
    NatsCredentials,
    agent_user,
    generate_password,
    inbox_prefix,
    secrets_dir,
    write_private,
)

AGENTS_DIR = "agents"


class AgentLoginError(ValueError):
    """A node login that cannot be made or found; the message names the field."""


def check_node(node: str) -> str:
    if (why := NODE.refusal(node)) is not None:
        raise AgentLoginError(f"node: {why}")
    return node


@dataclass(frozen=True)
class AgentLogin:
    """One node's agent login."""

    node: str
    password: str = field(repr=False)
    nats_ca: str | None = None

    @property
    def user(self) -> str:
        return agent_user(self.node)

    def credentials(self) -> NatsCredentials:
        return NatsCredentials(self.user, self.password, self.nats_ca)


def _folder(home: Path) -> Path:
    return home / "secrets" / AGENTS_DIR


def login_path(home: Path, node: str) -> Path:
    return _folder(home) / f"{node}.json"


def _read(path: Path) -> AgentLogin:
    data = json.loads(path.read_text())
    return AgentLogin(data["node"], data["password"], data.get("nats_ca"))


def load(home: Path) -> list[AgentLogin]:
    """Every node's agent login under ``home``, sorted by node."""
    if not _folder(home).is_dir():
        return []
    found = []
    for path in sorted(_folder(home).glob("*.json")):
        try:
            found.append(_read(path))
        except (KeyError, ValueError):
            # A torn file logs nobody in; `muster node add` writes it whole again.
            continue
    return found


def find(home: Path, node: str) -> AgentLogin | None:
    """The agent login of ``node``, or None when it has none (it then logs in as ``agent``)."""
    try:
        return _read(login_path(home, check_node(node)))
    except FileNotFoundError:
        return None
    except (KeyError, ValueError) as exc:
        raise AgentLoginError(f"node: the login file of {node!r} is unreadable ({exc})") from None


def add(home: Path, node: str, *, nats_url: str = "", ca: str | None = None) -> AgentLogin:
    """Give ``node``'s agent its login (again: the same password, the running system's address)."""
    existing = find(home, node)
    login = AgentLogin(node, existing.password if existing else generate_password(), ca)
    folder = secrets_dir(home) / AGENTS_DIR
    folder.mkdir(exist_ok=True, mode=0o700)
    folder.chmod(0o700)
    write_private(
        login_path(home, node),
        json.dumps(
            {"node": node, "nats_url": nats_url, "nats_ca": ca, "user": login.user,
             "password": login.password, "inbox_prefix": inbox_prefix(login.user)},
            indent=2,
        ),
    )  # fmt: skip
    return login


def remove(home: Path, node: str) -> None:
    """Forget ``node``'s agent login: that agent can no longer log in with it."""
    path = login_path(home, check_node(node))
    if not path.exists():
        raise AgentLoginError(f"node: no agent login for {node!r}")
    path.unlink()
