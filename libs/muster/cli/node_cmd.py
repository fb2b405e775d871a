"""``muster node add|list|remove``: machine agents' own NATS logins, one per node.

A node's login file (``MUSTER_HOME/secrets/agents/NODE.json``) is what
``muster agent --node NODE`` reads: it may then publish facts about its own
node only. A running embedded NATS is told at once; a system on external
servers takes the users from its own config.
"""

from __future__ import annotations

import argparse

from muster import agent_logins
from muster.cli.common import fail, print_json
from muster.runtime import nats_reload
from muster.runtime.settings import Settings


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("node")
    verbs = p.add_subparsers(dest="verb", metavar="VERB", required=True)
    add = verbs.add_parser(
        "add",
        help="give a node's agent a NATS login that speaks for that node only (again: keep its password)",
    )
    add.add_argument("name", help="the node's name, as `muster agent --node` gives it")
    add.set_defaults(run=_add)
    listing = verbs.add_parser("list", help="the nodes whose agents have a login of their own")
    listing.add_argument("--json", action="store_true", help="print one JSON document")
    listing.set_defaults(run=_list)
    remove = verbs.add_parser("remove", help="forget a node's login: its agent can no longer log in with it")
    remove.add_argument("name")
    remove.set_defaults(run=_remove)


def _reloaded(home) -> str:
    return nats_reload.reloaded(home, "agent_permissions")


def _add(args: argparse.Namespace) -> int:
    home = Settings.from_env().home
    url, ca = nats_reload.running_login(home)
    try:
        login = agent_logins.add(home, args.name, nats_url=url, ca=ca)
    except agent_logins.AgentLoginError as exc:
        fail(str(exc))
    print(f"node {login.node}: NATS user {login.user}, publishing facts about node {login.node} only")
    print(f"  login file {agent_logins.login_path(home, login.node)}; {_reloaded(home)}")
    return 0


def _list(args: argparse.Namespace) -> int:
    found = agent_logins.load(Settings.from_env().home)
    if args.json:
        print_json({a.node: {"user": a.user} for a in found})
    else:
        for a in found:
            print(f"{a.node}\tuser {a.user}")
    return 0


def _remove(args: argparse.Namespace) -> int:
    home = Settings.from_env().home
    try:
        agent_logins.remove(home, args.name)
    except agent_logins.AgentLoginError as exc:
        fail(str(exc))
    print(f"removed the login of node {args.name}; {_reloaded(home)}")
    return 0
