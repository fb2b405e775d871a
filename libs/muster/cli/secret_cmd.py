"""``muster secret set|list|remove``: values a job's environment names but the log never holds.

A value comes from standard input (typed without echo at a terminal) or from
``--from-file``, never from the command line, where other users' ``ps`` and
the shell's history would see it. ``--tenant`` works in that tenant's own
secrets, the only ones its jobs can name (``muster.secrets_store``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from muster.cli.common import CHECK_FAILED, add_tenant_option, fail, print_json, running_endpoints


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "secret",
        description="Secret values for jobs' environments (muster run --secret-env VAR=NAME): kept beside "
        "the log, never in it, and read by the agent that starts the pod.",
    )
    verbs = p.add_subparsers(dest="verb", metavar="VERB", required=True)
    put = verbs.add_parser("set", help="set a secret's value, from standard input or --from-file")
    put.add_argument("name", help="NAME or NAME/KEY (as a Kubernetes secretKeyRef names it)")
    put.add_argument(
        "--from-file", type=Path, metavar="PATH", help="the value is this file's bytes, as they are"
    )
    add_tenant_option(put, "a secret of this tenant's, for its own jobs")
    put.set_defaults(run=_set)
    listing = verbs.add_parser("list", help="the names of the secrets (never their values)")
    listing.add_argument("--json", action="store_true", help="print one JSON document")
    add_tenant_option(listing, "this tenant's secrets")
    listing.set_defaults(run=_list)
    remove = verbs.add_parser("remove", help="forget a secret: pods started later that name it fail")
    remove.add_argument("name")
    add_tenant_option(remove, "a secret of this tenant's")
    remove.set_defaults(run=_remove)


def read_value(name: str, from_file: Path | None) -> bytes:
    """The value to store: the file's bytes as they are; typed at a terminal, without echo; piped, as
    it comes less one trailing newline (the one ``echo`` adds)."""
    if from_file is not None:
        try:
            return from_file.read_bytes()
        except OSError as exc:
            fail(f"--from-file: cannot read {from_file}: {exc.strerror or exc}")
    if sys.stdin.isatty():
        import getpass

        return getpass.getpass(f"value of secret {name}: ").encode()
    data = sys.stdin.buffer.read()
    return data.removesuffix(b"\n").removesuffix(b"\r")


def _with_secrets(args: argparse.Namespace, act):
    """Run ``act(own secrets)`` against the running system as the login ``--tenant`` names."""
    import asyncio

    from nats.errors import NoRespondersError
    from nats.errors import TimeoutError as NatsTimeout

    from muster.sdk import Client
    from muster.secret_names import SecretError
    from muster.secrets_store import OwnSecrets, ensure_bucket
    from muster.tenants import TenantError

    endpoints = running_endpoints()

    async def go():
        async with await Client.connect(endpoints, tenant=args.tenant) as client:
            owner = client.tenant.tenant if client.tenant is not None else ""
            if not owner:
                # Where no `muster up` made the bucket (deploy/k8s), the system's login makes it.
                await ensure_bucket(client.bus.js, endpoints.subjects.stream)
            return await act(OwnSecrets(client.bus.nc, endpoints.subjects.stream, owner))

    try:
        return asyncio.run(go())
    except (TenantError, SecretError) as exc:
        fail(str(exc))
    except NoRespondersError:
        fail(
            "the system has no secret store yet: `muster up` makes one as it starts, as does any"
            " `muster secret` of the system's own login",
            CHECK_FAILED,
        )
    except NatsTimeout:
        fail("the secret store did not answer (is this login allowed to keep secrets?)", CHECK_FAILED)


def _set(args: argparse.Namespace) -> int:
    from muster.secret_names import SecretError, check_name, check_value

    try:
        check_name(args.name, "name")
        value = check_value(read_value(args.name, args.from_file))
    except SecretError as exc:
        fail(str(exc))
    if not value:
        fail("value: empty; give the value on standard input or with --from-file")
    _with_secrets(args, lambda secrets: secrets.set(args.name, value))
    print(f"set secret {args.name}")
    return 0


def _list(args: argparse.Namespace) -> int:
    found = _with_secrets(args, lambda secrets: secrets.names())
    if args.json:
        print_json({"secrets": found})
    else:
        for name in found:
            print(name)
    return 0


def _remove(args: argparse.Namespace) -> int:
    from muster.cli.suggest import did_you_mean
    from muster.secret_names import SecretError, check_name

    try:
        check_name(args.name, "name")
    except SecretError as exc:
        fail(str(exc))

    async def remove(secrets):
        return await secrets.remove(args.name), await secrets.names()

    removed, left = _with_secrets(args, remove)
    if not removed:
        fail(f"no secret {args.name}{did_you_mean(args.name, left)}")
    print(f"removed secret {args.name}")
    return 0
