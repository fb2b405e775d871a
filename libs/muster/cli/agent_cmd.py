"""``muster agent``: run the pods muster binds to this machine, as processes."""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import signal
import socket
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from muster import events as ev
from muster import pod_constraints
from muster.agent.sandbox import DEFAULT_USER
from muster.cli.common import fail
from muster.quantity import byte_count, cpu_millis

if TYPE_CHECKING:
    from muster.agent.machine import Gpus
    from muster.runtime.security import NatsCredentials
    from muster.runtime.settings import Endpoints


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "agent",
        description="Registers this machine as a node (GPUs through NVML when the NVIDIA library is "
        "present, else --gpus; CPU and memory from the OS), heartbeats, and runs every pod bound to it "
        "with CUDA_VISIBLE_DEVICES set to its devices. Logs go to $MUSTER_HOME/agent/NODE/logs/. "
        "Ctrl-C stops its pods (SIGTERM, then SIGKILL after their grace period) and leaves the pool. "
        "Pods never see the agent's environment; an agent running as root runs them as --run-as. "
        "With its node's own login ($MUSTER_HOME/secrets/agents/NODE.json, from `muster node add NODE`) "
        "it may speak for its node only; without one it logs in as the shared agent user.",
    )
    # As the kubelet does, the host name in lower case: a node name is (muster.names).
    p.add_argument(
        "--node",
        default=socket.gethostname().lower(),
        help="node name (default: the host name, in lower case)",
    )
    p.add_argument("--pool", default="default", help="node pool (default: default)")
    p.add_argument(
        "--label", action="append", default=[], metavar="KEY=VALUE", help="node label (repeatable)"
    )
    p.add_argument(
        "--taint",
        action="append",
        default=[],
        metavar="KEY[=VALUE]:EFFECT",
        help="node taint, as kubectl writes it (effect NoSchedule, PreferNoSchedule or NoExecute; repeatable): "
        "only pods that tolerate it are placed here",
    )
    p.add_argument("--gpus", type=int, help="number of GPUs, instead of asking NVML")
    p.add_argument("--gpu-memory", default="0", help="memory per GPU with --gpus, e.g. 80Gi")
    p.add_argument("--gpu-model", help="GPU model with --gpus, e.g. H100")
    p.add_argument("--cpu", help="CPU to offer (cores or millicores like 500m; default: the OS's count)")
    p.add_argument("--memory", help="memory to offer, e.g. 64Gi (default: the OS's total)")
    p.add_argument("--heartbeat", type=float, default=2.0, help="seconds between heartbeats (default 2)")
    p.add_argument(
        "--grace-period", type=float, default=30.0, help="default SIGTERM-to-SIGKILL seconds (default 30)"
    )
    p.add_argument("--address", default=socket.gethostname(), help="address other machines reach this one at")
    p.add_argument(
        "--nats", help="NATS URL of the system (default: MUSTER_NATS_URL, then MUSTER_HOME's record)"
    )
    p.add_argument(
        "--run-as",
        metavar="USER",
        help=f"user (name or uid) pods run as when the agent runs as root (default: {DEFAULT_USER}); "
        "an agent that is not root runs them as its own user",
    )
    p.add_argument(
        "--pods-dir",
        type=Path,
        help="folder in which each pod gets a scratch folder of its own, its HOME "
        "(default: muster-pods-UID-NODE in the temporary folder)",
    )
    p.set_defaults(run=_run)


def parse_labels(items: list[str]) -> dict[str, str]:
    labels = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            fail(f"--label: expected KEY=VALUE, got {item!r}")
        labels[key] = value
    return labels


def parse_taints(items: list[str]) -> list[ev.Taint]:
    """``--taint`` values (``key=value:Effect`` or ``key:Effect``) as taints, checked as a node's are."""
    taints = []
    for item in items:
        rest, sep, effect = item.rpartition(":")
        key, _, value = rest.partition("=")
        if not sep or not key:
            fail(f"--taint: expected KEY[=VALUE]:EFFECT, got {item!r}")
        try:
            taints += pod_constraints.taints([{"key": key, "value": value, "effect": effect}], "")
        except pod_constraints.ConstraintError as exc:
            fail(f"--taint {item!r}: {exc.message}")
    return taints


def find_gpus(args: argparse.Namespace) -> Gpus:
    from muster.agent.machine import Gpus, nvml_gpus

    if args.gpus is not None:
        if args.gpus < 0:
            fail(f"--gpus: must not be negative, got {args.gpus}")
        try:
            memory = byte_count(args.gpu_memory)
        except ValueError as exc:
            fail(f"--gpu-memory: {exc}")
        return Gpus(args.gpus, memory, args.gpu_model)
    return nvml_gpus() or Gpus(0, 0)


def nats_endpoints(url: str | None) -> Endpoints:
    """The system's bus; an agent needs no database, so only NATS must be known."""
    from muster.runtime.settings import Endpoints, Settings

    settings = Settings.from_env()
    recorded = settings.recorded_endpoints()
    nats_url = url or settings.nats_url or (recorded.nats_url if recorded else None)
    if not nats_url:
        fail(
            f"no running muster system found: pass --nats or set MUSTER_NATS_URL, "
            f"or start one with `muster up` (MUSTER_HOME={settings.home})",
            1,
        )
    prefix = settings.prefix if "MUSTER_PREFIX" in settings.extra or not recorded else recorded.prefix
    return Endpoints(nats_url=nats_url, pg_dsn=settings.pg_dsn or "", prefix=prefix)


def login_given(nats_url: str, env=os.environ) -> bool:
    """Whether the agent is told whom to log in as (``MUSTER_NATS_USER``, or a user in the URL)."""
    return bool(env.get("MUSTER_NATS_USER") or urlsplit(nats_url.split(",")[0]).username)


def own_login(home: Path, node: str, nats_url: str, env=os.environ) -> NatsCredentials | None:
    """The login of ``node``'s own agent user, if ``muster node add`` made one and no other login is
    asked for (``MUSTER_NATS_USER``, or a user in the URL); None: the login any client would use."""
    from muster import agent_logins
    from muster.runtime.security import NatsCredentials

    if login_given(nats_url, env):
        return None
    try:
        login = agent_logins.find(home, node)
    except agent_logins.AgentLoginError as exc:
        fail(str(exc))
    if login is None:
        return None
    return NatsCredentials(login.user, login.password, login.nats_ca or env.get("MUSTER_NATS_CA") or None)


def _run(args: argparse.Namespace) -> int:
    import asyncio

    from muster.agent.machine import node_spec
    from muster.agent.runtime import AgentConfig, run_agent
    from muster.agent.sandbox import resolve_run_as, user_name
    from muster.runtime.settings import Settings

    labels = parse_labels(args.label)
    taints = parse_taints(args.taint)
    gpus = find_gpus(args)
    try:
        cpu = cpu_millis(args.cpu) if args.cpu is not None else None
    except ValueError as exc:
        fail(f"--cpu: {exc}")
    try:
        memory = byte_count(args.memory) if args.memory is not None else None
    except ValueError as exc:
        fail(f"--memory: {exc}")
    if args.heartbeat <= 0:
        fail(f"--heartbeat: must be positive, got {args.heartbeat}")
    try:
        run_as = resolve_run_as(args.run_as, os.geteuid())
    except ValueError as exc:
        fail(str(exc))
    try:
        spec = node_spec(
            args.node,
            pool=args.pool,
            labels=labels,
            gpus=gpus,
            cpu=cpu,
            memory=memory,
            address=args.address,
            taints=taints,
        )
    except ValueError as exc:
        fail(str(exc))
    endpoints = nats_endpoints(args.nats)
    home = Settings.from_env().home
    credentials = own_login(home, args.node, endpoints.nats_url)
    config = AgentConfig(
        node=spec, home=home, heartbeat=args.heartbeat, grace_period=args.grace_period, address=args.address,
        run_as=run_as, pods_dir=args.pods_dir, credentials=credentials,
    )  # fmt: skip
    folders = config.pod_folders()
    try:
        folders.prepare()
    except ValueError as exc:
        fail(str(exc))
    logging.basicConfig(level=logging.INFO, format=f"%(asctime)s agent {args.node} %(levelname)s %(message)s")
    log = logging.getLogger("muster.agent")
    log.info(
        "node %s: %d gpus, %g cpu, %d bytes of memory; logs in %s",
        spec.name, gpus.count, spec.resources.cpu / 1000, spec.resources.memory, config.directory / "logs",
    )  # fmt: skip
    if credentials is None and not login_given(endpoints.nats_url):
        log.warning(
            "node %s has no NATS login of its own (`muster node add %s`): this agent logs in as any "
            "client would, as a user that may speak for every node", args.node, args.node,
        )  # fmt: skip
    elif credentials is not None:
        log.info("logged in as %s, which may speak for node %s only", credentials.user, args.node)
    if run_as is None:
        log.info(
            "pods run as %s, this agent's own user (only an agent running as root can run them as "
            "another); their folders are under %s", user_name(None), folders.root,
        )  # fmt: skip
    else:
        log.info("pods run as %s (uid %d); their folders are under %s", run_as.name, run_as.uid, folders.root)

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(NotImplementedError):
                loop.add_signal_handler(sig, stop.set)
        await run_agent(config, endpoints, stop)

    os.makedirs(config.directory, exist_ok=True)
    asyncio.run(main())
    return 0
