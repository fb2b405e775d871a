"""Helpers every subcommand shares: exit codes, JSON output, finding the system."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, NoReturn

if TYPE_CHECKING:
    from muster.runtime.settings import Endpoints

OK, CHECK_FAILED, BAD_INPUT = 0, 1, 2


class CliError(Exception):
    """Ends the command with a message on stderr and an exit code."""

    def __init__(self, message: str, code: int = BAD_INPUT):
        super().__init__(message)
        self.code = code


def fail(message: str, code: int = BAD_INPUT) -> NoReturn:
    raise CliError(message, code)


def print_json(value: object) -> None:
    import msgspec

    sys.stdout.write(msgspec.json.format(msgspec.json.encode(value), indent=2).decode() + "\n")


def running_endpoints() -> Endpoints:
    """The system this command talks to, or a clear error saying how to start one."""
    from muster.runtime.settings import NoRunningSystem, Settings

    try:
        return Settings.from_env().endpoints()
    except NoRunningSystem as exc:
        fail(str(exc), CHECK_FAILED)


def add_tenant_option(parser, help: str) -> None:
    """``--tenant NAME``, defaulting to ``MUSTER_TENANT``; unset, the command runs as the system's CLI."""
    parser.add_argument(
        "--tenant", default=os.environ.get("MUSTER_TENANT") or None, metavar="NAME", help=help
    )
