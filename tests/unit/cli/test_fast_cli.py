"""`muster --help`, `--version` and a command's `--help` load nothing they do not need (issue #27).

Each check runs in a fresh interpreter and reads its ``sys.modules``: a module imported once stays
imported, so the regression shows whatever the timing on a given machine. How long the calls take is
measured by ``muster bench cli``, not here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from muster.cli.main import COMMANDS

HEAVY = ("numba", "numpy", "asyncpg", "nats", "muster.scheduler", "opentelemetry", "rich")
"""What a call that only parses its command line must not import: the kernels' compiler and arrays, the
database and bus clients, the allocator, tracing, the terminal renderer."""

PROBE = """
import json, sys
from muster.cli.main import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
print(json.dumps(sorted(sys.modules)), file=sys.stderr)
"""


def quiet_env(**extra: str) -> dict[str, str]:
    """This environment without the variables that ask for spans to be exported, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_") and k != "MUSTER_TRACE_CONSOLE"}
    return {**env, **extra}


def loaded_by(*argv: str, env: dict[str, str] | None = None) -> set[str]:
    """The modules a fresh interpreter has loaded after ``muster ARGV``."""
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *argv],
        env=env or quiet_env(),
        capture_output=True,
        text=True,
        check=True,
    )
    return set(json.loads(done.stderr.splitlines()[-1]))


def heavy_in(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if any(m == h or m.startswith(h + ".") for h in HEAVY))


def test_muster_help_loads_no_command_and_nothing_heavy():
    modules = loaded_by("--help")
    assert heavy_in(modules) == []
    # Listing the commands loads none of them: each is loaded when it is run or asked for its help.
    assert sorted(m for m in modules if m.endswith("_cmd")) == []


def test_muster_version_loads_nothing_heavy_and_prints_the_version():
    done = subprocess.run(
        [sys.executable, "-m", "muster.cli.main", "--version"], capture_output=True, text=True, check=True
    )
    assert done.stdout.startswith("muster ")
    assert heavy_in(loaded_by("--version")) == []


@pytest.mark.parametrize("command", [c.name for c in COMMANDS])
def test_a_commands_help_loads_only_that_command_and_nothing_heavy(command):
    modules = loaded_by(command, "--help")
    assert heavy_in(modules) == []
    assert [m for m in modules if m.endswith("_cmd")] == [
        next(c.module for c in COMMANDS if c.name == command)
    ]


def test_a_benchmarks_help_leaves_the_placement_kernels_alone_even_where_it_lists_the_policies():
    assert heavy_in(loaded_by("bench", "--help")) == []
    assert heavy_in(loaded_by("bench", "openb", "--help")) == []


def test_writing_the_completion_script_loads_nothing_heavy():
    # It walks every command's parser, the openb policy names included.
    assert heavy_in(loaded_by("completion", "bash")) == []


def test_the_help_of_a_nested_verb_loads_nothing_heavy():
    for argv in (
        ("queues", "apply", "--help"),
        ("snapshots", "forget", "--help"),
        ("tenant", "add", "--help"),
    ):
        assert heavy_in(loaded_by(*argv)) == [], argv


def test_grouping_a_manifest_loads_neither_the_allocator_nor_a_client(tmp_path):
    path = tmp_path / "pod.yaml"
    path.write_text("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c}]}\n")
    assert heavy_in(loaded_by("group", str(path), "--json")) == []


def test_spans_are_still_exported_when_the_environment_asks_for_it(tmp_path):
    path = tmp_path / "pod.yaml"
    path.write_text("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c}]}\n")
    probe = (
        "import sys; from muster.cli.main import main; main(sys.argv[1:]); "
        "from muster import telemetry; print(telemetry.recording(), file=sys.stderr)"
    )
    for env, recording in ((quiet_env(MUSTER_TRACE_CONSOLE="1"), "True"), (quiet_env(), "False")):
        done = subprocess.run(
            [sys.executable, "-c", probe, "group", str(path), "--json"],
            env=env,
            capture_output=True,
            text=True,
        )
        assert done.stderr.split() == [recording]
