"""The command line's parser: argparse, with the nearest choice offered for a mistyped one."""

from __future__ import annotations

import argparse
from importlib import metadata

from muster.cli.suggest import nearest


class SuggestingParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose "invalid choice" error names the nearest valid one.

    Its subcommands' parsers are of this class too (argparse makes them of the parent's), so a
    mistyped verb (``muster queues aply``) gets the same help as a mistyped command.
    """

    def _check_value(self, action: argparse.Action, value) -> None:
        choices = action.choices
        if choices is not None and isinstance(value, str) and value not in choices:
            match = nearest(value, (c for c in choices if isinstance(c, str)))
            if match is not None:
                raise argparse.ArgumentError(action, f'invalid choice: "{value}"; did you mean "{match}"?')
        super()._check_value(action, value)


def version() -> str:
    """The installed package's version, from its metadata."""
    try:
        return metadata.version("muster")
    except metadata.PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown (not installed)"
