"""The command line's parser: argparse, with the nearest choice offered for a mistyped one, and
subcommands whose parsers are built only when used.

Every ``muster`` call builds the parser, so building it must cost next to nothing: a command's
module (and whatever it imports) is loaded when that command is run or asked for its help, not to
list it (``LazySubParsers``). The version is looked up only when ``--version`` asks for it.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from muster.cli.suggest import nearest

HIDDEN = "__"
"""A command whose name starts with this is for scripts (shell completion): listed nowhere, never
offered as the command meant."""

JOBS, LIVE_JOBS, QUEUES = "jobs", "live-jobs", "queues"
"""Kinds of names completion reads from the running system (``muster __complete KIND``): every job
it records, the jobs not yet finished, the queues."""


def hidden(name: str) -> bool:
    return name.startswith(HIDDEN)


class SuggestingParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose "invalid choice" error names the nearest valid one.

    Its subcommands' parsers are of this class too (argparse makes them of the parent's), so a
    mistyped verb (``muster queues aply``) gets the same help as a mistyped command.
    """

    def _check_value(self, action: argparse.Action, value) -> None:
        choices = action.choices
        if choices is not None and isinstance(value, str) and value not in choices:
            known = [c for c in choices if not (isinstance(c, str) and hidden(c))]
            match = nearest(value, (c for c in known if isinstance(c, str)))
            if match is not None:
                raise argparse.ArgumentError(action, f'invalid choice: "{value}"; did you mean "{match}"?')
            # argparse's own words, with the hidden choices left out.
            listed = ", ".join(map(repr, known))
            raise argparse.ArgumentError(action, f"invalid choice: {value!r} (choose from {listed})")
        super()._check_value(action, value)


Builder = Callable[[argparse._SubParsersAction], None]
"""Adds a subcommand's real parser to the subparsers it is given (``add_parser`` under its name)."""


class LazySubParsers(argparse._SubParsersAction):
    """Subcommands listed by name and help at once, each one's parser built only when that command
    is parsed, or asked for (``parser``).

    Until then a listed command has an empty placeholder parser, so argparse knows the name (a
    mistyped one gets the nearest) and ``--help`` lists it with its help.
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._builders: dict[str, Builder] = {}
        self._building: str | None = None

    def add_lazy(self, name: str, help: str | None, build: Builder) -> None:
        """List ``name`` with ``help`` (None: listed nowhere); ``build(self)`` adds its parser when it
        is first needed."""
        super().add_parser(name, **({} if help is None else {"help": help}))
        self._builders[name] = build

    def add_parser(self, name: str, **kwargs) -> argparse.ArgumentParser:
        if name == self._building:
            # The listed command's own parser replaces its placeholder; its help is listed already.
            kwargs.pop("help", None)
            del self._name_parser_map[name]
        return super().add_parser(name, **kwargs)

    def parser(self, name: str) -> argparse.ArgumentParser:
        """The parser of subcommand ``name``, built now if it has not been yet."""
        build = self._builders.pop(name, None)
        if build is not None:
            placeholder = self._name_parser_map[name]
            self._building = name
            try:
                build(self)
            finally:
                self._building = None
            if self._name_parser_map[name] is placeholder:
                raise RuntimeError(f"building subcommand {name!r} added no parser of that name")
        return self._name_parser_map[name]

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        if values and values[0] in self._builders:
            self.parser(values[0])
        super().__call__(parser, namespace, values, option_string)


def subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """The parsers of ``parser``'s subcommands by name (built, where they are built lazily), hidden
    ones left out; empty when it has none."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            get = action.parser if isinstance(action, LazySubParsers) else action.choices.__getitem__
            return {name: get(name) for name in list(action.choices) if not hidden(name)}
    return {}


def completes(action: argparse.Action, kind: str) -> argparse.Action:
    """Mark an argument (a positional, or a flag's value) as a name of ``kind`` (``JOBS``,
    ``LIVE_JOBS``, ``QUEUES``) that shell completion reads from the running system."""
    action.completes = kind
    return action


class VersionAction(argparse.Action):
    """``--version``: argparse's, except that the version is looked up only when asked for."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, help=None):
        super().__init__(
            option_strings,
            dest=dest,
            default=default,
            nargs=0,
            help=help or "show program's version number and exit",
        )

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        parser._print_message(f"{parser.prog} {version()}\n", sys.stdout)
        parser.exit()


def version() -> str:
    """The installed package's version, from its metadata."""
    from importlib import metadata

    try:
        return metadata.version("muster")
    except metadata.PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown (not installed)"
