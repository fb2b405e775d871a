"""Who may do what on a system's NATS and Postgres, and the secrets that prove it.

The permission tables and the config text are pure functions of the subject
prefix (and the passwords handed in), so embedded mode, docker-compose and
Kubernetes can all be checked against the same source. Secrets are random
(``secrets``), kept under ``MUSTER_HOME/secrets`` in files only their owner
can read, and never printed: every value that holds one hides it from
``repr``.
"""

from __future__ import annotations

import datetime
import ipaddress
import json
import os
import secrets
import ssl
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from muster.secret_names import bucket, space, subject_prefix
from muster.snapshots import SNAPSHOT_OWNERS, snapshot_bucket
from muster.subjects import Subjects, node_token

if TYPE_CHECKING:
    from muster.agent_logins import AgentLogin
    from muster.tenants import Tenant

SECRETS_DIR = "secrets"
SECRETS_FILE = "secrets.json"
CLIENT_FILE = "client.json"
FRAMEWORK_FILE = "framework.json"
PGPASS_FILE = "pgpass"

# Service module (``python -m services.<module>``) to the NATS user it logs in as.
SERVICE_USERS = {
    "projector": "projector",
    "queue_controller": "queue-controller",
    "podgrouper": "podgrouper",
    "allocator": "allocator",
    "binder": "binder",
    "nodewatch": "nodewatch",
    "dashboard": "dashboard",
}
# People and programs outside the service set: the CLI/SDK, machine agents, framework emitters.
CLIENT_USERS = ("cli", "agent", "framework")
NATS_USERS = (*SERVICE_USERS.values(), *CLIENT_USERS)

# The services' durable consumers (``NatsBus.consume``), by name: no tenant may create or change one.
DURABLE_CONSUMERS = ("podgrouper", "podgrouper-tenants", "queue-controller")

PG_WRITER = "muster_projector"
PG_READER = "muster_reader"
PG_SUPERUSER = "postgres"
PG_ROLES = (PG_SUPERUSER, PG_WRITER, PG_READER)
# Which services get which Postgres role; the rest get no Postgres password at all.
PG_ROLE_OF_SERVICE = {"projector": PG_WRITER, "dashboard": PG_READER}


def generate_password() -> str:
    """A fresh random password: URL-safe, so it fits in a URL or a config string unquoted."""
    return secrets.token_urlsafe(24)


# --- NATS permissions --------------------------------------------------------


@dataclass(frozen=True)
class Permissions:
    """Subjects a NATS user may publish to and subscribe to (allow lists; anything else is refused)."""

    publish: tuple[str, ...]
    subscribe: tuple[str, ...]
    allow_responses: bool = False
    """May answer a request it received, on the requester's reply subject, once."""
    publish_deny: tuple[str, ...] = ()
    """Subjects refused even where ``publish`` allows them."""


def inbox_prefix(user: str) -> str:
    """Where replies to ``user``'s requests and its consumers' deliveries arrive.

    Each user may subscribe only under its own prefix, so no login reads the replies
    (JetStream deliveries, log chunks) meant for another.
    """
    return f"_INBOX.{user}"


def _jetstream_reader(stream: str) -> tuple[str, ...]:
    """What any client of the system's stream needs: info, its own consumers, acks and flow control."""
    return (
        "$JS.API.INFO",
        f"$JS.API.STREAM.INFO.{stream}",
        # Subscribing without naming the stream asks which stream holds the subject; the nodes' own
        # snapshot stores are found by these names too (muster.snapshots.node_buckets).
        "$JS.API.STREAM.NAMES",
        f"$JS.API.CONSUMER.CREATE.{stream}",
        f"$JS.API.CONSUMER.CREATE.{stream}.>",
        f"$JS.API.CONSUMER.DURABLE.CREATE.{stream}.*",
        f"$JS.API.CONSUMER.INFO.{stream}.*",
        f"$JS.API.CONSUMER.MSG.NEXT.{stream}.*",
        f"$JS.ACK.{stream}.>",
        f"$JS.FC.{stream}.>",
    )


def _lease_bucket(stream: str) -> tuple[str, ...]:
    """The allocators' lease bucket (``muster.lease``): create it, read and write its keys."""
    kv = f"KV_{stream}_LEASES"
    return (
        f"$JS.API.STREAM.CREATE.{kv}",
        f"$JS.API.STREAM.INFO.{kv}",
        f"$JS.API.STREAM.MSG.GET.{kv}",
        f"$JS.API.DIRECT.GET.{kv}.>",
        f"$KV.{stream}_LEASES.>",
    )


def _snapshot_store(stream: str, *, write: bool, owner: str = "") -> tuple[str, ...]:
    """The snapshot object store of ``owner``'s folds (``muster.snapshots.snapshot_bucket``): read it,
    and with ``write``, create it, put, replace and delete snapshots."""
    bucket = snapshot_bucket(stream, owner)
    obj = f"OBJ_{bucket}"
    read = (
        f"$JS.API.STREAM.INFO.{obj}",
        f"$JS.API.STREAM.MSG.GET.{obj}",
        f"$JS.API.DIRECT.GET.{obj}.>",
        f"$JS.API.CONSUMER.CREATE.{obj}",
        f"$JS.API.CONSUMER.CREATE.{obj}.>",
        f"$JS.FC.{obj}.>",
    )
    if not write:
        return read
    return (*read, f"$JS.API.STREAM.CREATE.{obj}", f"$JS.API.STREAM.PURGE.{obj}", f"$O.{bucket}.>")


def _snapshot_forgetting(stream: str, owner: str) -> tuple[str, ...]:
    """Deleting snapshots from ``owner``'s store (``muster snapshots forget``): marking their records
    deleted and purging their chunks, never writing a snapshot."""
    bucket = snapshot_bucket(stream, owner)
    return (f"$O.{bucket}.M.>", f"$JS.API.STREAM.PURGE.OBJ_{bucket}")


def secret_permissions(
    stream: str, *, owner: str | None = None, read: bool = False, create: bool = False
) -> tuple[str, ...]:
    """The secret store (``muster.secrets_store``): with ``owner``, write and list that owner's space
    ('' the system's); with ``read``, read every space's values (agents, which run every owner's pods);
    with ``create``, make the bucket (``muster up``).

    Listing is a consumer created under its filter's own API subject, and the server holds a consumer to
    the filter its subject names: a login may list its own space and no other.
    """
    kv = f"KV_{bucket(stream)}"
    allowed: tuple[str, ...] = ()
    if owner is not None:
        own = f"{subject_prefix(stream)}{space(owner)}.>"
        allowed += (own, f"$JS.API.CONSUMER.CREATE.{kv}.*.{own}")
    if read:
        allowed += (f"$JS.API.DIRECT.GET.{kv}.>", f"$JS.API.STREAM.MSG.GET.{kv}")
    if read or create:
        allowed += (f"$JS.API.STREAM.INFO.{kv}",)
    if create:
        allowed += (f"$JS.API.STREAM.CREATE.{kv}",)
    return allowed


def nats_permissions(prefix: str = "muster", nodes: Sequence[str] = ()) -> dict[str, Permissions]:
    """Every NATS user's allow lists for the system with this subject prefix.

    Only the allocator publishes decisions; only the binder, nodewatch and
    machine agents publish pod facts; frameworks only submit workloads.
    ``nodes`` are the nodes with agent logins of their own (``agent_permissions``): the projector and
    the CLI read their snapshot stores too, and the CLI may forget their snapshots.
    """
    s = Subjects(prefix)
    stream = s.stream
    owners = (*SNAPSHOT_OWNERS, *(agent_user(node) for node in nodes))
    consumer = (*_jetstream_reader(stream), s.deadletter)
    logs = f"_{stream}_LOGS.*"
    alive = f"_{stream}_ALIVE.>"
    publish: dict[str, tuple[str, ...]] = {
        # The projector archives the stream, so it alone may purge what is archived; it reads every
        # fold's snapshots to know what the folds can do without (muster.retention).
        "projector": (
            *consumer,
            f"$JS.API.STREAM.PURGE.{stream}",
            *(p for owner in owners for p in _snapshot_store(stream, write=False, owner=owner)),
        ),
        "queue-controller": (
            *consumer,
            s.queues,
            *_snapshot_store(stream, write=True, owner="queue-controller"),
        ),
        "podgrouper": (
            *consumer,
            s.podgroups,
            s.topologies,
            s.answers(),
            *_snapshot_store(stream, write=True, owner="podgrouper"),
        ),
        "allocator": (
            *consumer,
            s.decisions(">"),
            s.queue_status,
            *_lease_bucket(stream),
            alive,
            *_snapshot_store(stream, write=True),
        ),
        "binder": (*consumer, s.pods(">"), *_snapshot_store(stream, write=True, owner="binder")),
        "nodewatch": (
            *consumer,
            s.nodes(">"),
            s.pods(">"),
            *_snapshot_store(stream, write=True, owner="nodewatch"),
        ),
        "dashboard": _jetstream_reader(stream),
        "cli": (
            *_jetstream_reader(stream),
            f"$JS.API.STREAM.CREATE.{stream}",
            s.workloads,
            s.queue_requests,
            s.nodes(">"),
            s.podgroups,
            logs,
            *(p for owner in owners for p in _snapshot_store(stream, write=False, owner=owner)),
            *(p for owner in owners for p in _snapshot_forgetting(stream, owner)),
            *secret_permissions(stream, owner="", create=True),
        ),
        # A machine agent without a login of its own (`agent_permissions`) logs in as `agent`: each
        # can write the others' snapshots in the shared agents' store (as it can publish their pod
        # facts), but no service's, nor any node's own store.
        "agent": (
            *consumer,
            s.nodes(">"),
            s.pods(">"),
            *_snapshot_store(stream, write=True, owner="agent"),
            *secret_permissions(stream, read=True),
        ),
        "framework": ("$JS.API.INFO", f"$JS.API.STREAM.INFO.{stream}", s.workloads),
    }
    subscribe = {user: (f"{inbox_prefix(user)}.>",) for user in publish}
    subscribe["agent"] = (*subscribe["agent"], logs)
    subscribe["allocator"] = (*subscribe["allocator"], alive)
    # An agent answers log requests, an allocator liveness probes, on the requester's reply subject,
    # and only there.
    return {
        user: Permissions(publish[user], subscribe[user], allow_responses=user in ("agent", "allocator"))
        for user in NATS_USERS
    }


def agent_user(node: str) -> str:
    """The NATS user of ``node``'s own agent login: one token, so its inbox prefix holds no other's."""
    return f"agent-{node_token(node)}"


def agent_permissions(prefix: str, node: str) -> Permissions:
    """The allow lists of ``node``'s own agent login (``muster.agent_logins``): facts on its node's
    subjects only, in any pool, log requests for its node only, and snapshots in its node's own store
    only (``muster.snapshots.snapshot_bucket``); it reads the stream as any agent.
    """
    s = Subjects(prefix)
    consumer = (*_jetstream_reader(s.stream), s.deadletter)
    return Permissions(
        publish=(
            *consumer,
            s.node_facts("*", node),
            s.node_pods("*", node),
            *_snapshot_store(s.stream, write=True, owner=agent_user(node)),
            *secret_permissions(s.stream, read=True),
        ),
        subscribe=(f"{inbox_prefix(agent_user(node))}.>", s.agent_logs(node)),
        allow_responses=True,
    )


def tenant_read_subjects(prefix: str, tenant: str, queues: Sequence[str]) -> tuple[str, ...]:
    """The subjects a tenant may read: its answers, and its own queues' requests (to compare a resent
    request with what the stream holds under its id)."""
    s = Subjects(prefix)
    return (s.answers(tenant), *(s.tenant_workloads(tenant, q) for q in queues))


def tenant_permissions(prefix: str, tenant: str, queues: Sequence[str]) -> Permissions:
    """A tenant's allow lists: submit and cancel on its own queues' subjects, read only its own subjects.

    A tenant reads through ephemeral consumers filtered to one of ``tenant_read_subjects``: the server
    takes the filter from the API subject it is asked on (``CONSUMER.CREATE.<stream>.<name>.<filter>``)
    and refuses a request whose consumer filters otherwise. No unfiltered consumer, no durable one, no
    stream or consumer info, no direct reads by sequence: nothing of another tenant's reaches it.
    """
    s = Subjects(prefix)
    user = f"tenant-{tenant}"
    reader = (
        *(
            f"$JS.API.CONSUMER.CREATE.{s.stream}.*.{subject}"
            for subject in tenant_read_subjects(prefix, tenant, queues)
        ),
        f"$JS.FC.{s.stream}.>",
    )
    return Permissions(
        publish=(
            *reader,
            *(s.tenant_workloads(tenant, q) for q in queues),
            *secret_permissions(s.stream, owner=tenant),
        ),
        subscribe=(f"{inbox_prefix(user)}.>",),
        # The create API updates a consumer that exists: naming a service's durable one would
        # re-filter it to the tenant's subject and starve the service.
        publish_deny=tuple(f"$JS.API.CONSUMER.CREATE.{s.stream}.{name}.>" for name in DURABLE_CONSUMERS),
    )


def _q(value: str) -> str:
    # NATS config strings are JSON-compatible when double-quoted; quoting keeps `$JS...` literal.
    return json.dumps(value)


def _list(values: tuple[str, ...], indent: str) -> str:
    inner = "".join(f"{indent}  {_q(v)}\n" for v in values)
    return f"[\n{inner}{indent}]"


def render_permissions(permissions: Permissions, indent: str = "") -> str:
    """The ``permissions`` map of one user, in nats.conf syntax."""
    deeper = indent + "  "
    responses = f"{deeper}allow_responses: true\n" if permissions.allow_responses else ""
    deny = f", deny: {_list(permissions.publish_deny, deeper)}" if permissions.publish_deny else ""
    return (
        "{\n"
        f"{deeper}publish: {{ allow: {_list(permissions.publish, deeper)}{deny} }}\n"
        f"{deeper}subscribe: {{ allow: {_list(permissions.subscribe, deeper)} }}\n"
        f"{responses}"
        f"{indent}}}"
    )


@dataclass(frozen=True)
class TlsFiles:
    """A CA and the server certificate it signed (PEM files)."""

    ca: Path
    cert: Path
    key: Path


@dataclass(frozen=True)
class NatsAuth:
    """What an embedded nats-server needs: users with their permissions, and TLS if asked for.

    ``passwords`` empty means no users: anyone on loopback may connect (``MUSTER_NATS_AUTH=off``).
    """

    prefix: str
    passwords: Mapping[str, str] = field(repr=False, default_factory=dict)
    tls: TlsFiles | None = None
    tenants: Sequence[Tenant] = ()
    """Tenants' users, besides the system's own (only where ``passwords`` turns users on)."""
    agents: Sequence[AgentLogin] = ()
    """Machine agents' own users, one per node (likewise)."""


def render_nats_conf(
    auth: NatsAuth,
    *,
    host: str,
    port: int,
    store_dir: Path,
    log_file: Path,
    server_name: str,
    pid_file: Path | None = None,
) -> str:
    """nats.conf of an embedded server: JetStream, one user per service and client, TLS if asked.

    The users live in the server's global account, the one a server started
    without a config uses too, so a home's log is the same whichever way its
    server was started (``muster replay`` on a stopped home starts it plainly).
    """
    lines = [
        "# Written by muster at every start; edits are lost.",
        f"listen: {_q(f'{host}:{port}')}",
        f"server_name: {_q(server_name)}",
        f"log_file: {_q(str(log_file))}",
        f"jetstream {{ store_dir: {_q(str(store_dir))} }}",
    ]
    if pid_file is not None:
        # How `muster tenant` finds the server to reload (SIGHUP) after changing its users.
        lines.append(f"pid_file: {_q(str(pid_file))}")
    if auth.tls is not None:
        lines.append(
            f"tls {{ cert_file: {_q(str(auth.tls.cert))}, key_file: {_q(str(auth.tls.key))}, timeout: 5 }}"
        )
    if auth.passwords:
        lines.append("authorization {")
        lines.append("  users: [")
        logins = [
            *(
                (user, auth.passwords[user], perms)
                for user, perms in nats_permissions(auth.prefix, [a.node for a in auth.agents]).items()
            ),
            *((t.user, t.password, tenant_permissions(auth.prefix, t.name, t.queues)) for t in auth.tenants),
            *((a.user, a.password, agent_permissions(auth.prefix, a.node)) for a in auth.agents),
        ]
        for user, password, perms in logins:
            lines.append(
                f"    {{ user: {_q(user)}, password: {_q(password)},\n"
                f"      permissions: {render_permissions(perms, '      ')} }}"
            )
        lines.append("  ]")
        lines.append("}")
    return "\n".join(lines) + "\n"


# --- secrets on disk ---------------------------------------------------------


def write_private(path: Path, text: str) -> Path:
    """Write ``text`` to ``path`` readable by its owner only (mode 0600, created so, never wider)."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = path.with_name(path.name + ".tmp")
    tmp.unlink(missing_ok=True)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(text)
    tmp.replace(path)
    return path


def secrets_dir(home: Path) -> Path:
    path = home / SECRETS_DIR
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    path.chmod(0o700)
    return path


@dataclass
class SystemSecrets:
    """The passwords of one home's embedded servers, generated once and kept for its next starts."""

    nats: dict[str, str] = field(repr=False)
    postgres: dict[str, str] = field(repr=False)

    @classmethod
    def load_or_create(cls, home: Path) -> SystemSecrets:
        path = secrets_dir(home) / SECRETS_FILE
        try:
            data = json.loads(path.read_text())
        except FileNotFoundError:
            data = {}
        nats = dict(data.get("nats", {}))
        postgres = dict(data.get("postgres", {}))
        missing = [u for u in NATS_USERS if u not in nats] + [r for r in PG_ROLES if r not in postgres]
        for user in NATS_USERS:
            nats.setdefault(user, generate_password())
        for role in PG_ROLES:
            postgres.setdefault(role, generate_password())
        found = cls(nats=nats, postgres=postgres)
        if missing or not path.exists():
            write_private(path, json.dumps({"nats": nats, "postgres": postgres}, indent=2))
        return found

    def values(self) -> list[str]:
        """Every secret value (what must never appear in a log)."""
        return [*self.nats.values(), *self.postgres.values()]


# --- TLS ---------------------------------------------------------------------


def make_tls(folder: Path, host: str = "127.0.0.1") -> TlsFiles:
    """A self-signed CA and a server certificate for ``host`` (and localhost), made once per folder."""
    files = TlsFiles(ca=folder / "ca.pem", cert=folder / "server.pem", key=folder / "server-key.pem")
    if files.ca.exists() and files.cert.exists() and files.key.exists():
        return files
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    # Certificates need real validity dates; they are not decisions, so the wall clock is fine here.
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "muster embedded CA")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=3650))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                key_cert_sign=True,
                crl_sign=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )  # fmt: skip
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    names: list[x509.GeneralName] = [x509.DNSName("localhost")]
    try:
        names.append(x509.IPAddress(ipaddress.ip_address(host)))
    except ValueError:
        names.append(x509.DNSName(host))
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, host)]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=825))
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    pem = serialization.Encoding.PEM
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    files.ca.write_bytes(ca.public_bytes(pem))
    files.cert.write_bytes(cert.public_bytes(pem))
    write_private(
        files.key,
        key.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()).decode(),
    )
    return files


def tls_context(ca: str | Path) -> ssl.SSLContext:
    """A client TLS context that trusts exactly ``ca``."""
    return ssl.create_default_context(cafile=str(ca))


# --- client credentials ------------------------------------------------------


@dataclass(frozen=True)
class NatsCredentials:
    """A NATS login (user, password) and the CA to trust for ``tls://`` URLs."""

    user: str | None = None
    password: str | None = field(default=None, repr=False)
    ca: str | None = None

    def connect_options(self) -> dict:
        """Keyword arguments for ``nats.connect``."""
        options: dict = {}
        if self.user:
            options["user"] = self.user
            options["password"] = self.password or ""
        if self.ca:
            options["tls"] = tls_context(self.ca)
        return options


def nats_connect_options(url: str, credentials: NatsCredentials | None) -> dict:
    """Keyword arguments for ``nats.connect`` to ``url``: the login, and the login's own inbox prefix.

    The user is the credentials' or, where the URL carries the login (deploy/), the URL's.
    """
    options = credentials.connect_options() if credentials else {}
    user = (credentials.user if credentials else None) or urlsplit(url.split(",")[0]).username
    if user:
        options["inbox_prefix"] = inbox_prefix(user)
    return options


def _server_key(url: str) -> tuple[str, int | None]:
    parts = urlsplit(url.split(",")[0])
    return (parts.hostname or "", parts.port)


# Systems this process started: a test or `muster demo` talks to what it started without files.
_started: dict[tuple[str, int | None], dict[str, NatsCredentials]] = {}


def remember_started(url: str, by_user: Mapping[str, NatsCredentials]) -> None:
    _started[_server_key(url)] = dict(by_user)


def forget_started(url: str) -> None:
    _started.pop(_server_key(url), None)


def client_user_for(service: str) -> str:
    """The client user a non-service process logs in as: machine agents as ``agent``, the rest as ``cli``."""
    return "agent" if service.startswith("agent-") else "cli"


def nats_credentials(
    url: str, *, service: str = "muster", env: Mapping[str, str] | None = None
) -> NatsCredentials | None:
    """How to log in to the NATS at ``url``, or None to connect as the URL says.

    In order: ``MUSTER_NATS_USER`` / ``MUSTER_NATS_PASSWORD`` / ``MUSTER_NATS_CA``
    from the environment; a system this process started; the client file
    ``muster up`` wrote under ``MUSTER_HOME`` for this very server.
    """
    env = os.environ if env is None else env
    ca = env.get("MUSTER_NATS_CA") or None
    if urlsplit(url.split(",")[0]).username:
        # The URL carries its login (how deploy/ passes it); nats-py reads it from there.
        return NatsCredentials(ca=ca) if ca else None
    if env.get("MUSTER_NATS_USER"):
        return NatsCredentials(env["MUSTER_NATS_USER"], env.get("MUSTER_NATS_PASSWORD", ""), ca)
    key = _server_key(url)
    user = client_user_for(service)
    if key in _started and user in _started[key]:
        return _started[key][user]
    home = Path(env.get("MUSTER_HOME") or ".muster")
    try:
        data = json.loads((home / SECRETS_DIR / CLIENT_FILE).read_text())
    except (FileNotFoundError, PermissionError, NotADirectoryError, ValueError):
        return NatsCredentials(ca=ca) if ca else None
    if _server_key(data.get("nats_url", "")) != key:
        return None
    users = data.get("users", {})
    if user not in users:
        return NatsCredentials(ca=data.get("nats_ca"))
    return NatsCredentials(user, users[user], data.get("nats_ca"))


def write_client_files(
    home: Path, nats_url: str, ca: Path | None, passwords: Mapping[str, str], *, pg_reader: str | None
) -> None:
    """The CLI's and agents' logins (client.json), a framework's (framework.json), Postgres' (pgpass): 0600."""
    folder = secrets_dir(home)
    if passwords:
        users = {u: passwords[u] for u in ("cli", "agent")}
        write_private(
            folder / CLIENT_FILE,
            json.dumps({"nats_url": nats_url, "nats_ca": str(ca) if ca else None, "users": users}, indent=2),
        )
        write_private(
            folder / FRAMEWORK_FILE,
            json.dumps(
                {"nats_url": nats_url, "nats_ca": str(ca) if ca else None, "user": "framework",
                 "password": passwords["framework"], "inbox_prefix": inbox_prefix("framework")},
                indent=2,
            ),
        )  # fmt: skip
    if pg_reader is not None:
        write_private(folder / PGPASS_FILE, pg_reader)


def clear_client_files(home: Path) -> None:
    """Take the client logins away, with any a stop cut short while it was writing (``write_private``'s
    ``.tmp``: a signal can land between its creation and its rename)."""
    for name in (CLIENT_FILE, FRAMEWORK_FILE, PGPASS_FILE):
        for path in (home / SECRETS_DIR / name, home / SECRETS_DIR / f"{name}.tmp"):
            path.unlink(missing_ok=True)


def pgpass_line(host: str, port: int, database: str, user: str, password: str) -> str:
    """One line of a libpq password file (``:`` and ``\\`` escaped)."""

    def esc(v: str) -> str:
        return v.replace("\\", "\\\\").replace(":", "\\:")

    return ":".join(esc(str(v)) for v in (host, port, database, user, password)) + "\n"


def pg_passfile(env: Mapping[str, str] | None = None) -> Path | None:
    """The password file ``muster up`` wrote for readers under ``MUSTER_HOME``, if there is one."""
    env = os.environ if env is None else env
    path = Path(env.get("MUSTER_HOME") or ".muster") / SECRETS_DIR / PGPASS_FILE
    return path if path.is_file() else None


# --- Postgres roles ----------------------------------------------------------


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _literal(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def role_statements(schema: str, passwords: Mapping[str, str]) -> list[str]:
    """SQL (run as the superuser) making the writer own ``schema`` and the reader only able to SELECT it."""
    w, r, s = _ident(PG_WRITER), _ident(PG_READER), _ident(schema)
    statements = []
    for role in (PG_WRITER, PG_READER):
        # CREATE ROLE has no IF NOT EXISTS; the DO block makes this idempotent across restarts.
        statements.append(
            "DO $$ BEGIN "
            f"IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = {_literal(role)}) THEN "
            f"CREATE ROLE {_ident(role)} LOGIN; END IF; END $$"
        )
        statements.append(
            f"ALTER ROLE {_ident(role)} WITH LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE "
            f"PASSWORD {_literal(passwords[role])}"
        )
    statements += [
        f"CREATE SCHEMA IF NOT EXISTS {s} AUTHORIZATION {w}",
        f"ALTER SCHEMA {s} OWNER TO {w}",
        f"REVOKE ALL ON SCHEMA {s} FROM PUBLIC",
        f"GRANT USAGE ON SCHEMA {s} TO {r}",
        f"ALTER DEFAULT PRIVILEGES FOR ROLE {w} IN SCHEMA {s} GRANT SELECT ON TABLES TO {r}",
        f"ALTER DEFAULT PRIVILEGES FOR ROLE {w} IN SCHEMA {s} GRANT SELECT ON SEQUENCES TO {r}",
        "REVOKE CREATE ON SCHEMA public FROM PUBLIC",
        # The migrations say CREATE SCHEMA IF NOT EXISTS, which Postgres checks even when it exists.
        f"GRANT CREATE ON DATABASE postgres TO {w}",
    ]
    return statements


async def setup_postgres_roles(conn, schema: str, passwords: Mapping[str, str]) -> None:
    """Create or update the writer and reader roles on an asyncpg superuser connection.

    Tables a previous, role-less run created in the schema are handed to the writer.
    """
    for statement in role_statements(schema, passwords):
        await conn.execute(statement)
    rows = await conn.fetch(
        "SELECT c.relname, c.relkind FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE n.nspname = $1 AND c.relkind IN ('r', 'p', 'v', 'm', 'S') "
        "AND pg_get_userbyid(c.relowner) <> $2 ORDER BY c.relname",
        schema,
        PG_WRITER,
    )
    kinds = {"r": "TABLE", "p": "TABLE", "v": "VIEW", "m": "MATERIALIZED VIEW", "S": "SEQUENCE"}
    for row in rows:
        await conn.execute(
            f"ALTER {kinds[row['relkind']]} {_ident(schema)}.{_ident(row['relname'])} OWNER TO {_ident(PG_WRITER)}"
        )
    s = _ident(schema)
    await conn.execute(f"GRANT SELECT ON ALL TABLES IN SCHEMA {s} TO {_ident(PG_READER)}")
    await conn.execute(f"GRANT SELECT ON ALL SEQUENCES IN SCHEMA {s} TO {_ident(PG_READER)}")
