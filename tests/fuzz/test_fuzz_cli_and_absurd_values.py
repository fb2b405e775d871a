"""CLI arguments and absurd values: an exit code of 0, 1 or 2 with a message, never a traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from muster.bounds import MAX_NODE_GPUS, MAX_PODS_PER_GROUP
from muster.cli.main import main
from muster.scenario import ScenarioError, parse_queues, parse_scenario

FAST = settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
SCENARIO = Path(__file__).resolve().parents[1] / "scenarios" / "gang-all-or-nothing.yaml"


def run_cli(argv: list[str]) -> int:
    """The CLI's exit code; argparse's own usage errors arrive as SystemExit and count as exits."""
    try:
        return main(argv)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 2


tokens = st.one_of(
    st.sampled_from(["--json", "--check", "--help", "-f", "--log", "--from-seq", "--to-seq", "-", "--", "x"]),
    st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=12),
)


@FAST
@given(
    command=st.sampled_from(["group", "simulate", "replay"]),
    args=st.lists(tokens, max_size=4),
    file_arg=st.sampled_from(["", "scenario", "garbage", "missing", "dir"]),
)
def test_random_arguments_to_offline_commands_exit_0_1_or_2(
    tmp_path_factory, command, args, file_arg, capsys
):
    tmp = tmp_path_factory.mktemp("cli")
    garbage = tmp / "garbage.yaml"
    garbage.write_bytes(b"\xff\xfe: [unclosed\n\t- {")
    files = {
        "": [],
        "scenario": [str(SCENARIO)],
        "garbage": [str(garbage)],
        "missing": [str(tmp / "nope")],
        "dir": [str(tmp)],
    }
    argv = [command, *args, *files[file_arg]]
    if command == "replay":
        argv = ["replay", "--log", *(files[file_arg] or [str(garbage)]), *args]
    code = run_cli(argv)
    assert code in (0, 1, 2), (argv, code)
    if code == 2:
        assert capsys.readouterr().err.strip(), f"exit 2 without a message for {argv}"


def test_a_bad_scenario_file_names_the_file_and_the_field(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: s\nnodes: []\nqueues: []\njobs: [{name: j, queue: q, pods: [{count: -3}]}]\n")
    assert run_cli(["simulate", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "bad.yaml" in err and "jobs[0]" in err


def scenario(**changes) -> dict:
    base = {
        "name": "absurd",
        "config": {"max_cycles": 5},
        "nodes": [{"name": "n1", "resources": {"gpu": 8, "cpu": 64, "memory": "512Gi"}}],
        "queues": [{"name": "q", "resources": {"gpu": {"quota": 8}}}],
        "jobs": [{"name": "j", "queue": "q", "pods": [{"count": 1, "resources": {"gpu": 1}}]}],
    }
    base.update(changes)
    return base


def simulate_json(tmp_path: Path, doc: dict) -> dict:
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(doc))
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert run_cli(["simulate", "--json", str(path)]) == 0
    return json.loads(out.getvalue())


def test_a_node_with_a_trillion_gpus_is_refused_naming_the_field():
    doc = scenario(nodes=[{"name": "n1", "resources": {"gpu": 1e12}}])
    with pytest.raises(ScenarioError, match=r"nodes\[0\]\.resources\.gpu: at most"):
        parse_scenario(doc)


def test_a_pod_asking_a_trillion_gpus_is_refused_naming_the_field():
    doc = scenario(jobs=[{"name": "j", "queue": "q", "pods": [{"count": 1, "resources": {"gpu": 1e12}}]}])
    with pytest.raises(
        ScenarioError, match=r"jobs\[0\]\.pods\[0\]\.resources\.gpu: .* above the limit of 4096"
    ):
        parse_scenario(doc)


def test_a_pod_asking_more_gpus_than_any_node_has_stays_pending_with_a_reason(tmp_path):
    doc = scenario(
        jobs=[{"name": "j", "queue": "q", "pods": [{"count": 1, "resources": {"gpu": MAX_NODE_GPUS}}]}]
    )
    job = simulate_json(tmp_path, doc)["jobs"]["j"]
    assert job["status"] == "pending" and job["reason"]
    assert job["pods"] == []


def test_a_gang_of_more_pods_than_readers_take_is_refused_naming_the_field():
    doc = scenario(jobs=[{"name": "big", "queue": "q", "pods": [{"count": 1_000_000_000}]}])
    with pytest.raises(ScenarioError, match=r"jobs\[0\]\.pods\[0\]\.count: 1000000000 is above the limit"):
        parse_scenario(doc)


def test_the_largest_gang_allowed_stays_pending_with_a_reason(tmp_path):
    doc = scenario(
        jobs=[{"name": "big", "queue": "q", "pods": [{"count": MAX_PODS_PER_GROUP, "resources": {"gpu": 1}}]}]
    )
    job = simulate_json(tmp_path, doc)["jobs"]["big"]
    assert job["status"] == "pending" and job["reason"] and job["pods"] == []


@pytest.mark.parametrize(
    "queues, field",
    [
        ([{"name": "a", "parent": "b"}, {"name": "b", "parent": "a"}], "[0].parent"),
        ([{"name": "a", "parent": "a"}], "[0].parent"),
        ([{"name": "a", "resources": {"gpu": {"quota": -5}}}], "[0].resources.gpu.quota"),
        ([{"name": "a", "resources": {"cpu": {"limit": -2}}}], "[0].resources.cpu.limit"),
    ],
    ids=["cyclic parents", "own parent", "negative quota", "negative limit"],
)
def test_impossible_queue_trees_are_refused_naming_the_field(queues, field):
    with pytest.raises(ScenarioError) as caught:
        parse_queues(queues)
    assert caught.value.path == field
