"""What a pod's process may see of its machine: its own user, its own folder, its own variables.

An agent holds the system's logins (in its environment and under
``MUSTER_HOME``); a pod runs whatever a tenant submitted. So a pod never
inherits the agent's environment: it gets the variables its spec sets,
muster's own (devices, rank, rendezvous) and a few basics (``PATH``,
``HOME`` — its own folder —, ``USER``, ``LOGNAME``).

When the agent runs as root, pods run as an unprivileged user (``--run-as``,
``nobody`` by default): the home's secrets (owner-only files in an
owner-only folder) are out of its reach. An agent that is not root cannot
switch users; its pods run as its own user and can read what it can.

Each pod gets a folder of its own, owned by the user it runs as, outside
``MUSTER_HOME`` (by default under the system's temporary folder): its
``HOME``, and its working directory unless the spec names one. The folder
is scratch space, removed once the pod has ended and been reported.
"""

from __future__ import annotations

import os
import pwd
import shutil
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path

from muster.agent.files import file_stem
from muster.names import NODE

DEFAULT_USER = "nobody"
PLAIN_NODE = 128
"""Characters of a node name a folder name holds as it is (a file name has 255 bytes)."""
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


@dataclass(frozen=True)
class RunAs:
    """The account pods run as."""

    name: str
    uid: int
    gid: int


def resolve_run_as(requested: str | None, euid: int) -> RunAs | None:
    """Who pods run as: ``requested`` (default ``nobody``) for an agent running as root; None (the
    agent's own user) otherwise. Raises ``ValueError`` naming ``--run-as`` when that cannot be."""
    if euid != 0:
        if requested is not None and _lookup(requested).pw_uid != euid:
            raise ValueError(
                f"--run-as {requested}: only an agent running as root can run pods as another user"
            )
        return None
    entry = _lookup(requested or DEFAULT_USER)
    return RunAs(entry.pw_name, entry.pw_uid, entry.pw_gid)


def _lookup(user: str) -> pwd.struct_passwd:
    try:
        return pwd.getpwuid(int(user)) if user.isdigit() else pwd.getpwnam(user)
    except KeyError:
        raise ValueError(f"--run-as: no user {user!r} on this machine") from None


def user_name(run_as: RunAs | None) -> str:
    if run_as is not None:
        return run_as.name
    try:
        return pwd.getpwuid(os.geteuid()).pw_name
    except KeyError:
        return str(os.geteuid())


def pod_environment(spec: dict[str, str], muster: dict[str, str], home: Path, user: str) -> dict[str, str]:
    """A pod's whole environment: the basics, then what its spec sets, then muster's variables."""
    basics = {"PATH": DEFAULT_PATH, "HOME": str(home), "USER": user, "LOGNAME": user}
    return {**basics, **spec, **muster}


def default_pods_dir(node: str) -> Path:
    """Where an agent keeps its pods' folders unless told (``--pods-dir``): named for the node, or,
    for a node whose name is long (or predates the rule for names), for a digest of it."""
    plain = len(node) <= PLAIN_NODE and NODE.fits(node)
    return (
        Path(tempfile.gettempdir()) / f"muster-pods-{os.geteuid()}-{node if plain else file_stem(node, node)}"
    )


class PodFolders:
    """One folder per pod under ``root``, owned by the user the pod runs as."""

    def __init__(self, root: Path, run_as: RunAs | None):
        self.root = root
        self.run_as = run_as

    def prepare(self) -> None:
        """Create the root; raises ``ValueError`` naming ``--pods-dir`` if it is not this agent's own
        (in a shared folder like /tmp, someone else may have made it first)."""
        try:
            self.root.parent.mkdir(parents=True, exist_ok=True)
            self.root.mkdir(mode=0o711, exist_ok=True)
            info = self.root.lstat()
        except OSError as exc:
            raise ValueError(f"--pods-dir: cannot make {self.root}: {exc.strerror}") from None
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid():
            raise ValueError(f"--pods-dir: {self.root} is not a folder of this agent's user")
        # Others may pass through (a pod reaches its own folder) but not list what is there.
        self.root.chmod(0o711)

    def path(self, name: str) -> Path:
        return self.root / name

    def make(self, name: str) -> Path:
        """A fresh, empty folder for one run of a pod, its user's alone."""
        folder = self.path(name)
        self.remove(name)
        folder.mkdir(mode=0o700)
        if self.run_as is not None:
            os.chown(folder, self.run_as.uid, self.run_as.gid)
        return folder

    def remove(self, name: str) -> None:
        shutil.rmtree(self.path(name), ignore_errors=True)
