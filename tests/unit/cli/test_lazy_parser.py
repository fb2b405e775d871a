"""Subcommands listed at once and built when used: what a person sees does not change."""

from __future__ import annotations

import argparse

import pytest
from muster.cli.main import COMMANDS, build_parser
from muster.cli.parsing import LazySubParsers, SuggestingParser, subcommands


def parser_with(built: list[str]) -> SuggestingParser:
    """``prog`` with a listed ``status`` (built on use, noted in ``built``), a hidden ``__names`` and a
    plain ``group``."""

    def build_status(sub: argparse._SubParsersAction) -> None:
        built.append("status")
        p = sub.add_parser("status", help="not listed twice")
        p.add_argument("--json", action="store_true")
        p.set_defaults(run="status")

    def build_names(sub: argparse._SubParsersAction) -> None:
        built.append("__names")
        sub.add_parser("__names").set_defaults(run="names")

    parser = SuggestingParser(prog="prog")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", action=LazySubParsers)
    sub.add_lazy("status", "queues, jobs and nodes", build_status)
    sub.add_lazy("__names", None, build_names)
    sub.add_parser("group", help="groups").set_defaults(run="group")
    return parser


def test_a_listed_command_is_built_only_when_it_is_parsed():
    built: list[str] = []
    parser = parser_with(built)
    assert parser.parse_args(["group"]).run == "group"
    assert built == []
    args = parser.parse_args(["status", "--json"])
    assert (args.run, args.json, built) == ("status", True, ["status"])


def test_the_help_lists_every_command_once_with_its_help_without_building_any(capsys):
    built: list[str] = []
    with pytest.raises(SystemExit):
        parser_with(built).parse_args(["--help"])
    out = capsys.readouterr().out
    assert "queues, jobs and nodes" in out and "groups" in out
    assert "not listed twice" not in out and "__names" not in out
    assert built == []


def test_a_hidden_command_runs_but_is_never_offered(capsys):
    built: list[str] = []
    parser = parser_with(built)
    assert parser.parse_args(["__names"]).run == "names"
    for typed in ("__name", "xyzzy"):
        with pytest.raises(SystemExit):
            parser.parse_args([typed])
        assert "__names" not in capsys.readouterr().err


def test_a_mistyped_command_gets_the_nearest_listed_one(capsys):
    with pytest.raises(SystemExit):
        parser_with([]).parse_args(["statsu"])
    assert 'did you mean "status"?' in capsys.readouterr().err


def test_subcommands_builds_every_listed_command_and_leaves_hidden_ones_out():
    built: list[str] = []
    found = subcommands(parser_with(built))
    assert sorted(found) == ["group", "status"]
    assert "--json" in found["status"].format_usage() and built == ["status"]


def test_a_builder_that_adds_no_parser_of_its_name_is_an_error():
    parser = SuggestingParser(prog="prog")
    sub = parser.add_subparsers(dest="command", action=LazySubParsers)
    sub.add_lazy("status", "status", lambda s: s.add_parser("other"))
    with pytest.raises(RuntimeError, match="'status'"):
        parser.parse_args(["status"])


def test_every_listed_muster_command_registers_the_parser_of_its_name():
    found = subcommands(build_parser())
    assert sorted(found) == sorted(c.name for c in COMMANDS if c.help is not None)
    for name, parser in found.items():
        assert parser.get_default("subcommand") == name
