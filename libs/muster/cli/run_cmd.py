"""``muster run --queue Q -- COMMAND...``: submit a command job for ``muster agent`` to run.

A gang of ``--count`` identical processes; each gets RANK, WORLD_SIZE,
MASTER_ADDR and MASTER_PORT, so ``torchrun``-style programs find each other.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
import time
from pathlib import Path

from muster.cli.common import CHECK_FAILED, add_tenant_option, fail, print_json, running_endpoints
from muster.cli.parsing import QUEUES, completes


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "run",
        description="Submits a Command job: --count identical processes, scheduled as one gang. "
        "Prints the job's name for `muster logs` and `muster cancel`.",
    )
    completes(
        p.add_argument("--queue", required=True, help="queue to submit to (one the running system has)"),
        QUEUES,
    )
    p.add_argument("--gpus", default="0", help="GPUs per process; a fraction such as 0.5 shares one device")
    p.add_argument("--count", type=int, default=1, help="processes in the gang (default 1)")
    p.add_argument("--min", type=int, help="processes that must run together (default: --count)")
    p.add_argument("--cpu", help="CPU per process (cores, or millicores like 500m)")
    p.add_argument("--memory", help="memory per process, e.g. 16Gi")
    p.add_argument(
        "--env", action="append", default=[], metavar="KEY=VALUE", help="environment variable (repeatable)"
    )
    p.add_argument(
        "--secret-env",
        action="append",
        default=[],
        metavar="VAR=SECRET",
        help="set VAR from a secret (muster secret set SECRET) when the pod starts; the value is in no event"
        " (repeatable)",
    )
    p.add_argument("--workdir", help="working directory of the processes (default: the current one)")
    p.add_argument("--grace-period", type=float, help="seconds between SIGTERM and SIGKILL when evicted")
    p.add_argument("--priority-class", help="train, build-preemptible, build or inference")
    p.add_argument("--name", help="job name (default: derived from the command, made unique)")
    add_tenant_option(p, "run as this tenant; --queue must be one of its queues")
    p.add_argument("--json", action="store_true", help="print one JSON document")
    p.add_argument("command", nargs=argparse.REMAINDER, help="-- then the command and its arguments")
    p.set_defaults(run=_run)


def job_name(command: list[str], given: str | None) -> str:
    """The given name, or the program's name plus a token unique to this submission."""
    if given:
        return given
    # A job name is lowercase ASCII letters, digits and '-' (muster.names): anything else becomes '-'.
    stem = "".join(c if c.isascii() and c.isalnum() else "-" for c in Path(command[0]).name.lower())
    stem = stem.strip("-") or "run"
    token = hashlib.sha256(f"{command}:{time.time_ns()}:{os.getpid()}".encode()).hexdigest()[:6]
    return f"{stem[:40]}-{token}"


def _pairs(items: list[str], flag: str, shape: str) -> dict[str, str]:
    found: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            fail(f"{flag}: expected {shape}, got {item!r}")
        found[key] = value
    return found


def environment(args: argparse.Namespace) -> dict[str, str] | list[dict[str, str]]:
    """The spec's ``env``: a mapping of values, or, with secrets, a list of entries naming each."""
    from muster.secret_names import SecretError, check_name

    values = _pairs(args.env, "--env", "KEY=VALUE")
    secrets = _pairs(args.secret_env, "--secret-env", "VAR=SECRET")
    if not secrets:
        return values
    for variable, secret in secrets.items():
        if variable in values:
            fail(f"--secret-env: {variable} is set by --env too")
        try:
            check_name(secret, "--secret-env")
        except SecretError as exc:
            fail(str(exc))
    return [
        *({"name": k, "value": v} for k, v in values.items()),
        *({"name": k, "secret": v} for k, v in secrets.items()),
    ]


def build_spec(args: argparse.Namespace, command: list[str]) -> dict:
    env = environment(args)
    try:
        gpus = float(args.gpus)
    except ValueError:
        fail(f"--gpus: expected a number, got {args.gpus!r}")
    spec: dict = {
        "queue": args.queue,
        "command": command,
        "env": env,
        "workdir": args.workdir or os.getcwd(),
        "count": args.count,
        "gpus": gpus,
    }
    for key, value in (
        ("min", args.min),
        ("cpu", args.cpu),
        ("memory", args.memory),
        ("grace_period", args.grace_period),
        ("priority_class", args.priority_class),
    ):
        if value is not None:
            spec[key] = value
    return spec


async def note_missing_secrets(client, refs) -> None:
    """Say on stderr which named secrets the submitter does not have yet: not refused, since one set
    before the pod starts is the one read, but a pod that starts without it fails."""
    if not refs:
        return
    from muster.secrets_store import OwnSecrets

    owner = client.tenant.tenant if client.tenant is not None else ""
    have = set(await OwnSecrets(client.bus.nc, client.bus.subjects.stream, owner).names())
    for ref in refs:
        if ref.secret not in have:
            print(
                f"note: secret {ref.secret!r} ({ref.name}) is not set (muster secret set {ref.secret});"
                " a pod that starts without it fails",
                file=sys.stderr,
            )


def _run(args: argparse.Namespace) -> int:
    import asyncio

    from muster.cli.queue_check import check_queues
    from muster.cli.submit_cmd import submit_and_hear
    from muster.grouping.command_job import manifest
    from muster.grouping.errors import ManifestError
    from muster.grouping.group import group_manifests
    from muster.sdk import Client, SubmitError, workload_uid
    from muster.tenants import TenantError

    command = list(args.command)
    if command and command[0] == "--":
        command = command[1:]
    if not command:
        fail("give the command after --, e.g. muster run --queue q -- python train.py")
    name = job_name(command, args.name)
    doc = manifest(name, build_spec(args, command))
    try:
        (group,) = group_manifests([doc])
    except ManifestError as exc:
        # Name the flag, not the manifest field the flag becomes.
        if exc.path.startswith("spec."):
            flag = "--" + exc.path.removeprefix("spec.").replace("_", "-")
        else:
            flag = "--name" if exc.path == "metadata.name" else exc.path
        fail(f"{flag}: {exc.message}")
    endpoints = running_endpoints()

    async def send() -> str:
        async with await Client.connect(endpoints, tenant=args.tenant) as client:
            await check_queues(client, [group.queue])
            await note_missing_secrets(client, group.pods[0].secret_env)
            # A tenant's queue is its subject's; the system's logins leave it to the manifest.
            queue = group.queue if client.tenant is not None else None
            return await submit_and_hear(client, [doc], queue=queue, uid=workload_uid([doc]))

    try:
        uid = asyncio.run(send())
    except TenantError as exc:
        fail(str(exc))
    except SubmitError as exc:
        fail(str(exc), CHECK_FAILED)
    if args.json:
        print_json({"job": name, "uid": uid, "queue": group.queue, "pods": args.count})
    else:
        print(
            f"submitted {name}: {args.count} process(es) to queue {group.queue} (min {group.min_available})"
        )
        print(f"  muster logs {name} --follow    muster cancel {name}")
    return 0
