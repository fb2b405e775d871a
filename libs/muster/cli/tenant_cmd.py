"""``muster tenant add|list|remove``: teams with their own NATS login, queues and jobs.

A tenant's login file (``MUSTER_HOME/secrets/tenants/NAME.json``) is what its
clients use (``--tenant NAME``). A running embedded NATS is told at once; a
system on external servers takes the users from its own config.
"""

from __future__ import annotations

import argparse

from muster import tenants
from muster.cli.common import fail, print_json
from muster.cli.parsing import QUEUES, completes
from muster.runtime import nats_reload
from muster.runtime.settings import Settings


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("tenant")
    verbs = p.add_subparsers(dest="verb", metavar="VERB", required=True)
    add = verbs.add_parser("add", help="declare a tenant (again: replace its queues, keep its password)")
    add.add_argument("name", help="lowercase letters, digits and '-'")
    completes(
        add.add_argument(
            "--queue",
            action="append",
            required=True,
            dest="queues",
            help="a queue it may submit to (repeatable)",
        ),
        QUEUES,
    )
    add.set_defaults(run=_add)
    listing = verbs.add_parser("list", help="the declared tenants and their queues")
    listing.add_argument("--json", action="store_true", help="print one JSON document")
    listing.set_defaults(run=_list)
    remove = verbs.add_parser("remove", help="forget a tenant: its login stops working; its jobs stay")
    remove.add_argument("name")
    remove.set_defaults(run=_remove)


def _reloaded(home) -> str:
    return nats_reload.reloaded(home, "tenant_permissions")


def _add(args: argparse.Namespace) -> int:
    home = Settings.from_env().home
    url, ca = nats_reload.running_login(home)
    try:
        tenant = tenants.add(home, args.name, args.queues, nats_url=url, ca=ca)
    except tenants.TenantError as exc:
        fail(str(exc))
    print(f"tenant {tenant.name}: queues {', '.join(tenant.queues)}; NATS user {tenant.user}")
    print(f"  login file {tenants.login_path(home, tenant.name)}; {_reloaded(home)}")
    return 0


def _list(args: argparse.Namespace) -> int:
    found = tenants.load(Settings.from_env().home)
    if args.json:
        print_json({t.name: {"queues": list(t.queues), "user": t.user} for t in found})
    else:
        for t in found:
            print(f"{t.name}\tqueues {', '.join(t.queues)}\tuser {t.user}")
    return 0


def _remove(args: argparse.Namespace) -> int:
    home = Settings.from_env().home
    try:
        tenants.remove(home, args.name)
    except tenants.TenantError as exc:
        fail(str(exc))
    print(f"removed tenant {args.name}; {_reloaded(home)}")
    return 0
